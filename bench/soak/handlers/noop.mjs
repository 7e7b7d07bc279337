// Soak handler: does nothing, so what grows (or not) is the worker's own memory.
export default {
  [Symbol.for('durable-worker.handler')]: true,
  type: '*',
  async handle() {},
};

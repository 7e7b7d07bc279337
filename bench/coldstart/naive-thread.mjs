// A thread of naive-threads.mjs: imports the handler module (once per thread) and runs it on an event.
export default async function run({ handlerFile, event }) {
  const { default: handler } = await import(handlerFile);
  await handler.handle(event, {});
}

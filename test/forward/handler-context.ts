import type { HandlerContext } from '../../src/handlers/define.js';

export const noopLog = { debug() {}, info() {}, warn() {}, error() {} };

/** The context the worker gives the forwarding handler, for calling it directly. */
export function contextFor(deadlineInMs = 5_000, controller = new AbortController()): HandlerContext {
  return {
    signal: controller.signal,
    log: noopLog,
    attempt: 1,
    deliveryAttempt: 1,
    generation: 1,
    workerId: 'w-0',
    leaseId: 'lease-1',
    resources: undefined,
    handlerName: '@forward',
    deadlineMs: Date.now() + deadlineInMs,
  };
}

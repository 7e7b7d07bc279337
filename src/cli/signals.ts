import { releaseEarlySignals } from './early-signals.js';

const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;
export type ShutdownSignal = (typeof SHUTDOWN_SIGNALS)[number];

/** Conventional exit status of a process killed by a signal: 128 + signal number. */
export const SIGNAL_EXIT_CODES: Record<ShutdownSignal, number> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Two-phase shutdown (docs/operations.md): the first SIGTERM/SIGINT asks for a drain, a second one means
 * "now" (an impatient Ctrl-C, or the orchestrator's grace period running out). Returns a disposer.
 */
export function onShutdownSignals(handlers: { first(signal: ShutdownSignal): void; second(signal: ShutdownSignal): void }): () => void {
  releaseEarlySignals();
  let received = 0;
  const listener = (signal: ShutdownSignal) => {
    received += 1;
    if (received === 1) handlers.first(signal);
    else handlers.second(signal);
  };
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, listener);
  return () => {
    for (const signal of SHUTDOWN_SIGNALS) process.off(signal, listener);
  };
}

/**
 * Exits with `code` after `graceMs` if something still holds the event loop once a command is
 * done. The timer is unref'd: a clean process exits at once and never sees it.
 */
export function exitIfStillRunning(code: number, graceMs = 3_000): void {
  setTimeout(() => process.exit(code), graceMs).unref();
}

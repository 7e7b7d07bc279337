import type { Logger } from 'pino';
import type { WorkerEmitter } from './events.js';
import { backoffMs, sleep } from './timing.js';

export interface SupervisorOptions {
  /** Number of pull loops (`--workers`). */
  workers: number;
  /** workerIds are `<prefix>-<index>`, index from 0 (stable across restarts, like StatefulSet ordinals). */
  workerIdPrefix: string;
  /** Runs one loop until the drain signal stops it; a throw is a crash. */
  runLoop(workerId: string): Promise<void>;
  events: WorkerEmitter;
  logger: Logger;
  /** Restart backoff after a crash: base and ceiling, ms. Defaults 1000 / 30000. */
  restartBaseMs?: number;
  restartMaxMs?: number;
}

/** The stable workerIds of a run (CONTRACT: `<worker-id-prefix>-<index>`). */
export function workerIds(prefix: string, workers: number): string[] {
  return Array.from({ length: workers }, (_, i) => `${prefix}-${i}`);
}

/** A loop that ran this long before crashing starts its backoff afresh. */
const HEALTHY_RUN_MS = 60_000;

/**
 * Runs N pull loops side by side. A loop that throws (a bug, not a platform error: those are handled
 * inside the loop) is restarted with exponential backoff and reported as `loop:crashed`. `run`
 * resolves once every loop has returned after `signal` aborted.
 */
export function createSupervisor(options: SupervisorOptions): { run(signal: AbortSignal): Promise<void> } {
  const baseMs = options.restartBaseMs ?? 1_000;
  const maxMs = options.restartMaxMs ?? 30_000;
  const supervise = async (workerId: string, signal: AbortSignal) => {
    let crashes = 0;
    while (!signal.aborted) {
      const startedMs = Date.now();
      try {
        await options.runLoop(workerId);
        return;
      } catch (error) {
        if (signal.aborted) return;
        crashes = Date.now() - startedMs > HEALTHY_RUN_MS ? 1 : crashes + 1;
        const restartInMs = Math.max(baseMs / 2, backoffMs(crashes, baseMs, maxMs));
        options.events.emit('loop:crashed', { workerId, error, restartInMs });
        options.logger.error({ err: error, workerId, restartInMs, crashes }, `pull loop ${workerId} crashed: restarting`);
        await sleep(restartInMs, signal);
      }
    }
  };
  return {
    async run(signal: AbortSignal) {
      await Promise.all(workerIds(options.workerIdPrefix, options.workers).map((id) => supervise(id, signal)));
    },
  };
}

/**
 * The package entry's heavy entry points, each loading its modules at its first call. Handler
 * modules import `defineHandler` from the entry, and with `--isolation thread` every worker thread
 * evaluates it: importing the worker and the emulator with it would put in each thread's heap
 * zod, pino, piscina, prom-client and the emulator's routes, code the thread never runs. Both are
 * async, so loading on call changes nothing for callers.
 */
import type { RunOptionsInput } from './config/options.js';
import type { DeadLetters, OpenDeadLettersOptions } from './dead-letter-admin/api.js';
import type { EmulatorOptions, RunningEmulator } from './emulator/index.js';
import type { RunningWorker, StartWorkerOptions } from './worker/running-worker.js';

/**
 * Programmatic start: the `run` options in camelCase (`baseUrl`, `destination`, `handlers`,
 * `workers`, `visibility`...), validated and defaulted exactly like the CLI's (no environment is
 * read). Throws ConfigError naming the option for a bad value.
 *
 * ```ts
 * const worker = await startWorker({ baseUrl, tenant, clientId, clientSecret, destination: 'my-consumer' });
 * process.on('SIGTERM', () => void worker.close());
 * ```
 */
export async function startWorker(options: RunOptionsInput, extra: StartWorkerOptions = {}): Promise<RunningWorker> {
  const { startWorkerFromOptions } = await import('./worker/public.js');
  return startWorkerFromOptions(options, extra);
}

/** Starts the platform emulator: public API, issuer and seeding endpoints on one origin. */
export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const emulator = await import('./emulator/index.js');
  return emulator.startEmulator(options);
}

/**
 * Opens a dead-letter sink (`file:PATH`, `sqlite:PATH`, `redis://...`, `postgres://...`) to list,
 * inspect, replay and purge its records: what `durable-worker dead-letters` does (docs/operations.md).
 */
export async function openDeadLetters(url: string, options: OpenDeadLettersOptions = {}): Promise<DeadLetters> {
  const api = await import('./dead-letter-admin/api.js');
  return api.openDeadLetters(url, options);
}

import { resolveWorkerConfig } from '../config/load.js';
import type { RunOptionsInput } from '../config/options.js';
import type { RunningWorker, StartWorkerOptions } from './running-worker.js';
import { startWorker } from './start.js';

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
export async function startWorkerFromOptions(options: RunOptionsInput, extra: StartWorkerOptions = {}): Promise<RunningWorker> {
  return startWorker(resolveWorkerConfig(options as Record<string, unknown>), extra);
}

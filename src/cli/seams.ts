import type { Logger } from 'pino';
import type { PlatformClient } from '../client/index.js';
import type { WorkerConfig } from '../config/types.js';

export type { LoadedHandler } from '../handlers/loader.js';

/**
 * The other parts the CLI drives, loaded lazily: `durable-worker check` must not pay for the
 * emulator, `emulator` must not load piscina. Signatures are the agreed seams.
 */

export type { StartWorker, WorkerHandle } from '../worker/running-worker.js';

/** What `dev --demo` needs of the platform client. */
export type DemoClient = Pick<PlatformClient, 'ingest' | 'close'>;

export const loadStartWorker = async (): Promise<import('../worker/running-worker.js').StartWorker> => (await import('../worker/start.js')).startWorker;
export const loadStartEmulator = async () => (await import('../emulator/index.js')).startEmulator;
export const loadHandlersLoader = async () => (await import('../handlers/loader.js')).loadHandlers;
export const loadCreateClient = async () => (await import('../client/index.js')).createClient;

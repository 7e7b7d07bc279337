import type { Logger } from 'pino';
import type { WorkerConfig } from '../config/types.js';

/**
 * The other parts the CLI drives, loaded lazily: `durable-worker check` must not pay for the
 * emulator, `emulator` must not load piscina. Signatures are the agreed seams.
 */

export interface RunningWorker {
  /** Drains within shutdownTimeoutSeconds; idempotent. */
  close(): Promise<void>;
  done: Promise<{ reason: 'idle' | 'closed' | 'fatal'; error?: unknown }>;
  metricsUrl: string | undefined;
}

export interface StartWorker {
  (config: WorkerConfig, options?: { logger?: Logger }): Promise<RunningWorker>;
}

export interface LoadedHandler {
  name: string;
  file: string;
  types: string[];
}

export interface LoadHandlers {
  (dir: string): Promise<LoadedHandler[]>;
}

export interface DemoClient {
  ingest(sourceId: string, request: { entries: { id: string; properties: { id: string; value: string | number | boolean | string[] | null }[] }[] }): Promise<unknown>;
  close(): Promise<void>;
}

export interface CreateClient {
  (options: { baseUrl: string; tenant: string; clientId: string; clientSecret: string }): DemoClient;
}

async function load<T>(relative: string, name: string): Promise<T> {
  const module = (await import(new URL(relative, import.meta.url).href)) as Record<string, unknown>;
  const value = module[name];
  if (typeof value !== 'function') throw new Error(`${relative} does not export ${name}()`);
  return value as T;
}

export const loadStartWorker = () => load<StartWorker>('../worker/start.js', 'startWorker');
export const loadStartEmulator = async () => (await import('../emulator/index.js')).startEmulator;
export const loadHandlersLoader = () => load<LoadHandlers>('../handlers/loader.js', 'loadHandlers');
export const loadCreateClient = () => load<CreateClient>('../client/index.js', 'createClient');

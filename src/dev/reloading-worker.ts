import type { Logger } from 'pino';
import type { WorkerConfig } from '../config/types.js';
import { loadHandlerSet } from '../handlers/handler-set.js';
import { nextHandlerGeneration } from '../handlers/module-url.js';
import type { WorkerHandle, StartWorker } from '../worker/running-worker.js';
import { watchHandlersFolder } from './handler-watch.js';
import { enableModuleReload } from './module-reload.js';
import { watchTypes, type TypeWatch } from './type-watch.js';

/** What the terminal and the console are told after each save. */
export interface ReloadStatus {
  /** Epoch ms. */
  at: number;
  /** `loaded`: the saved handlers run; `failed`: they could not load, the previous ones still run (or none, when the new worker failed to start). */
  state: 'loaded' | 'failed';
  /** One line for a person. */
  message: string;
  /** The load error (first line), when `failed`. */
  error?: string;
  /** The changed files, relative to the handlers folder. */
  changed: string[];
}

export interface HandlerReloadOptions {
  /** Quiet time after the last change before a reload. Default 100 ms. */
  debounceMs?: number;
  /** Told of every reload's outcome (the console). */
  onStatus?: (status: ReloadStatus) => void;
}

type WorkerEnd = Awaited<WorkerHandle['done']>;

const firstLine = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';

/**
 * `dev`'s worker that follows the handlers folder: on a save, it loads the saved handlers in this
 * thread first (a module that fails to load leaves the running worker alone), then drains the
 * running worker as at SIGTERM (events in flight finish, the rest go back to the consumer) and
 * starts a new one with the same configuration, against the same emulator and console. A reload
 * runs one at a time; saves made during one make one more after it.
 */
class ReloadingWorker implements WorkerHandle {
  readonly done: Promise<WorkerEnd>;
  #current: WorkerHandle | undefined;
  #resolveDone: (end: WorkerEnd) => void = () => {};
  #reloading: Promise<void> = Promise.resolve();
  #pending: string[] | undefined;
  #closed = false;
  /** Resolves once the folder is watched (saves from then on reload). */
  readonly watching: Promise<void>;
  readonly #watcher: Promise<{ close(): void }>;
  readonly #types: TypeWatch;

  constructor(
    first: WorkerHandle,
    private readonly config: WorkerConfig,
    private readonly start: StartWorker,
    private readonly logger: Logger,
    private readonly options: HandlerReloadOptions,
  ) {
    this.done = new Promise((resolve) => (this.#resolveDone = resolve));
    this.#follow(first);
    this.#watcher = watchHandlersFolder(config.handlersDir, {
      debounceMs: options.debounceMs ?? 100,
      onChange: (paths) => this.#schedule(paths),
      onError: (err) => logger.warn({ err }, `watching ${config.handlersDir} failed: saves no longer reload the handlers (restart dev)`),
    }).then(
      (watcher) => {
        logger.info({ handlersDir: config.handlersDir }, `watching ${config.handlersDir}: a saved change reloads the handlers (--no-watch to turn off)`);
        return watcher;
      },
      (err: unknown) => {
        logger.warn({ err }, `cannot watch ${config.handlersDir}: saves do not reload the handlers (restart dev)`);
        return { close() {} };
      },
    );
    this.watching = this.#watcher.then(() => {});
    this.#types = watchTypes(config.handlersDir, process.cwd(), logger);
    this.#types.check();
  }

  get metricsUrl(): string | undefined {
    return this.#current?.metricsUrl;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#types.close();
    (await this.#watcher).close();
    await this.#reloading;
    const worker = this.#current;
    if (worker === undefined) this.#resolveDone({ reason: 'closed' });
    else await worker.close();
  }

  /** The worker's own end (idle, fatal, closed) is this one's; a drain for a reload is not. */
  #follow(worker: WorkerHandle): void {
    this.#current = worker;
    void worker.done.then((end) => {
      if (this.#current === worker && (this.#closed || end.reason !== 'closed')) this.#resolveDone(end);
    });
  }

  #schedule(paths: string[]): void {
    if (this.#closed) return;
    if (this.#pending !== undefined) {
      this.#pending.push(...paths);
      return;
    }
    this.#pending = paths;
    this.#reloading = this.#reloading.then(() => {
      const changed = [...new Set(this.#pending)];
      this.#pending = undefined;
      return this.#closed ? undefined : this.#reload(changed);
    });
  }

  async #reload(changed: string[]): Promise<void> {
    const startedAt = Date.now();
    const { handlersDir } = this.config;
    const forward = this.config.forwardUrl === undefined ? undefined : { url: this.config.forwardUrl, mode: this.config.forwardMode };
    nextHandlerGeneration();
    let count: number;
    try {
      count = (await loadHandlerSet({ handlersDir, forward })).length;
    } catch (err) {
      const still = this.#current === undefined ? 'no worker runs until the next save' : 'the previous handlers keep running';
      this.#report({ state: 'failed', changed, error: firstLine(err), message: `handlers not reloaded: ${firstLine(err)} (${still})` }, err);
      return;
    }
    this.logger.info({ changed }, `${changed.join(', ') || handlersDir} changed: draining the worker to reload the handlers`);
    const previous = this.#current;
    this.#current = undefined;
    await previous?.close();
    if (this.#closed) return;
    try {
      const worker = await this.start(this.config, { logger: this.logger });
      this.#follow(worker);
      if (worker.metricsUrl !== previous?.metricsUrl && worker.metricsUrl !== undefined)
        this.logger.info({ url: worker.metricsUrl }, `metrics at ${worker.metricsUrl}/metrics`);
    } catch (err) {
      this.#report(
        {
          state: 'failed',
          changed,
          error: firstLine(err),
          message: `the worker did not start with the saved handlers: ${firstLine(err)} (no worker runs until the next save)`,
        },
        err,
      );
      return;
    }
    this.#report({ state: 'loaded', changed, message: `reloaded ${count} handler(s) in ${Date.now() - startedAt} ms` });
    this.#types.check();
  }

  #report(status: Omit<ReloadStatus, 'at'>, err?: unknown): void {
    if (status.state === 'failed') this.logger.error({ err, changed: status.changed }, status.message);
    else this.logger.info({ changed: status.changed }, status.message);
    this.options.onStatus?.({ at: Date.now(), ...status });
  }
}

/**
 * Wraps a worker start so that the started worker reloads its handlers on a save (`dev`; never
 * `run`). The first start is the plain one: its failure is the CLI's exit 2, as without watching.
 */
export function startWithReload(start: StartWorker, options: HandlerReloadOptions = {}): StartWorker {
  return async (config, startOptions) => {
    const logger = startOptions?.logger;
    if (logger === undefined) throw new TypeError('startWithReload needs the process logger');
    enableModuleReload();
    const first = await start(config, startOptions);
    const worker = new ReloadingWorker(first, config, start, logger, options);
    await worker.watching;
    return worker;
  };
}

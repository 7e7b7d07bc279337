import { randomUUID } from 'node:crypto';
import { BroadcastChannel } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { ReplayRunOptions } from '../dead-letter-admin/replay-resources.js';
import { HANDLER_LOG_CHANNEL_ENV, isEventLine } from '../observability/handler-log-tap.js';
import { redactUrl } from '../runtime/redact-url.js';
import type { WorkerEmitter } from '../observability/worker-events.js';
import { apiRoutes } from './api.js';
import { ConsumerWatch } from './consumer-watch.js';
import { DeadLetterDesk } from './dead-letter-desk.js';
import { DeferredDesk } from './deferred-desk.js';
import { deferredRunsOf } from '../idempotency/deferred.js';
import { EmulatorControl } from './emulator-control.js';
import { LimitsDesk, type LimitedWorker } from './limits-desk.js';
import { EventStreamHub } from './event-stream.js';
import { ConsoleFeed } from './feed.js';
import { peekEventLogLine } from './log-lines.js';
import { loadPageFiles } from './page-files.js';
import type { Hello, ReloadView } from './protocol.js';
import { isLoopbackInterface } from '../runtime/loopback-guard.js';
import { startConsoleServer, type ConsoleServer } from './server.js';

export interface DevConsoleOptions {
  /** Events kept for the Events page (`--console-events`). */
  maxEvents: number;
}

export interface ConsoleStartOptions {
  /** `--console-host` (loopback by default) and `--console-port`. */
  host: string;
  port: number;
  portIsDefault: boolean;
  /** Host names besides the loopback ones the console answers (`--allowed-hosts`). */
  allowedHosts?: readonly string[];
  /** Origins besides the console's own whose pages may change state (`--allowed-origins`). */
  allowedOrigins?: readonly string[];
  /** The emulator the worker consumes, and the credentials `dev` gives the worker. */
  emulatorUrl: string;
  tenant: string;
  clientId: string;
  clientSecret: string;
  destination: string;
  /** The worker's dead-letter sink and the prefix of its records. */
  deadLetterUrl: string;
  idempotencyPrefix: string;
  cwd: string;
  /** How a replay from the page runs handlers (the worker's options). */
  replay: Omit<ReplayRunOptions, 'isolation' | 'signal' | 'logger'>;
  logger: Logger;
}

/**
 * The development console of `dev`: a page that shows the worker's events as they flow, the
 * consumer in the emulator, and the dead letters (src/console/page/). Created before the process
 * logger, whose lines it taps (`tap`), and before the worker, whose threads find the channel of
 * their log lines in their environment (`shareWithThreads`); then started (its server) and attached
 * to the worker's event bus. `run` never loads any of it.
 */
export class DevConsole {
  readonly feed: ConsoleFeed;
  readonly #channelName = `durable-worker:console-logs:${randomUUID()}`;
  readonly #channel: BroadcastChannel;
  readonly #hub = new EventStreamHub();
  readonly #limits = new LimitsDesk({ deferredForLimits: (handlers, cap) => this.#deferred?.limitWaits(handlers, cap) ?? Promise.resolve(undefined) });
  #deferred: DeferredDesk | undefined;
  #reload: ReloadView | undefined;
  #closers: Array<() => unknown> = [];

  constructor(options: DevConsoleOptions) {
    this.feed = new ConsoleFeed({ maxEvents: options.maxEvents });
    this.#channel = new BroadcastChannel(this.#channelName);
    this.#channel.onmessage = (message: unknown) => this.tap(String((message as { data: unknown }).data));
    (this.#channel as unknown as { unref?: () => void }).unref?.();
  }

  /** For createLogger's `tap`: a line of a handler run logged in this process, or posted by a thread. */
  readonly tap = (line: string): void => {
    if (!isEventLine(line)) return;
    const peeked = peekEventLogLine(line);
    if (peeked !== undefined) this.feed.log(peeked);
  };

  /**
   * Puts the channel of the handlers' log lines in this process's environment, which the worker's
   * threads inherit when they start (observability/handler-log-tap.ts); `close` takes it out.
   */
  shareWithThreads(env: NodeJS.ProcessEnv = process.env): void {
    env[HANDLER_LOG_CHANNEL_ENV] = this.#channelName;
    this.#closers.push(() => {
      if (env[HANDLER_LOG_CHANNEL_ENV] === this.#channelName) delete env[HANDLER_LOG_CHANNEL_ENV];
    });
  }

  /**
   * Follows a worker (each one `dev --watch` starts): listens to its event bus (until close), and
   * reads its limits for the Limits page until the next one.
   */
  attach(worker: { events: WorkerEmitter } & LimitedWorker): void {
    this.#closers.push(this.feed.attach(worker.events));
    this.#limits.follow(worker);
  }

  /** The outcome of a reload of the handlers after a save: shown on the page until the next one. */
  reloaded(view: ReloadView): void {
    this.#reload = view;
    this.#hub.broadcast('reload', view);
  }

  /** Starts the server; resolves with its URL. */
  async start(options: ConsoleStartOptions): Promise<string> {
    const { logger } = options;
    const { createClient } = await import('../client/index.js');
    const client = createClient({ baseUrl: options.emulatorUrl, tenant: options.tenant, clientId: options.clientId, clientSecret: options.clientSecret });
    const control = new EmulatorControl({ url: options.emulatorUrl, destination: options.destination, client });
    this.#closers.push(() => control.close());
    const hub = this.#hub;
    const watch = new ConsumerWatch({
      destination: options.destination,
      tenant: options.tenant,
      readState: () => control.state(),
      onSample: (view) => hub.broadcast('consumer', view),
    });
    this.#closers.push(() => watch.stop());
    const deadLetters = new DeadLetterDesk({
      open: async () =>
        (await import('../dead-letter-admin/api.js')).openDeadLetters(options.deadLetterUrl, { prefix: options.idempotencyPrefix, cwd: options.cwd }),
      replay: { ...options.replay, logger: logger.child({ component: 'console-replay' }) },
      onResult: (result) => this.feed.replayed(result),
      onChange: () => this.feed.deadLettersChanged(),
    });
    this.#closers.push(() => deadLetters.close());
    const deferred = new DeferredDesk({
      // The worker's store, located as a replay from this page locates it.
      open: async () => {
        const [{ createIdempotencyStore, DEFAULT_DONE_TTL_MS }, { resolveStoreUrl }, { DEFAULT_REPLAY_IDEMPOTENCY }] = await Promise.all([
          import('../idempotency/index.js'),
          import('../config/schema.js'),
          import('../dead-letter-admin/replay-resources.js'),
        ]);
        const url = resolveStoreUrl(options.cwd, options.replay.idempotencyUrl ?? DEFAULT_REPLAY_IDEMPOTENCY);
        return createIdempotencyStore(url, { prefix: options.idempotencyPrefix, doneTtlMs: options.replay.idempotencyTtlMs ?? DEFAULT_DONE_TTL_MS });
      },
      deferredOf: deferredRunsOf,
    });
    this.#deferred = deferred;
    this.#closers.push(() => deferred.close());
    this.#closers.push(
      this.feed.subscribe({
        changed: (summaries, dropped) => {
          if (summaries.length > 0) hub.broadcast('events:changed', summaries);
          if (dropped.length > 0) hub.broadcast('events:dropped', dropped);
        },
        deadLettersChanged: () => hub.broadcast('dead-letters:changed', { at: Date.now() }),
        notice: (notice) => hub.broadcast('notice', notice),
      }),
    );
    const hello: Hello = {
      instance: randomUUID(),
      startedAt: Date.now(),
      destination: options.destination,
      maxEvents: this.feed.maxEvents,
      deadLetterSink: redactUrl(options.deadLetterUrl),
    };
    const server: ConsoleServer = await startConsoleServer({
      host: options.host,
      ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
      ...(options.allowedOrigins === undefined ? {} : { allowedOrigins: options.allowedOrigins }),
      port: options.port,
      portIsDefault: options.portIsDefault,
      routes: apiRoutes({ hello, feed: this.feed, watch, control, deadLetters, deferred, limits: this.#limits, reload: () => this.#reload }),
      page: loadPageFiles(),
      stream: (res) =>
        hub.add(res, [
          ['hello', hello],
          ['events', this.feed.list()],
          ['consumer', watch.latest],
          ['lag', watch.history],
          ...(this.#reload === undefined ? [] : [['reload', this.#reload] as ['reload', ReloadView]]),
        ]),
      logger,
    });
    if (!isLoopbackInterface(options.host)) {
      logger.warn(
        { host: options.host },
        `the console listens on ${options.host}: it has no login, and whoever reaches it can replay and purge dead letters and inject faults`,
      );
    }
    // Streams end before the server closes, so that close() does not wait for them.
    this.#closers.push(() => server.close());
    this.#closers.push(() => hub.close());
    watch.start();
    return server.url;
  }

  /** Idempotent; each part closed on its own, the last started first. */
  async close(): Promise<void> {
    const closers = this.#closers.reverse();
    this.#closers = [];
    for (const close of closers) {
      try {
        await close();
      } catch {
        // Closing a development page must not fail the process's exit.
      }
    }
    this.feed.close();
    this.#channel.close();
  }
}

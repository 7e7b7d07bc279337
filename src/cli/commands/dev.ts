import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Argv, CommandModule } from 'yargs';
import { collectRunOptions, loadWorkerConfig } from '../../config/load.js';
import { envName } from '../../config/options.js';
import { ConfigError } from '../../errors.js';
import { parseAllowedHosts } from '../../runtime/loopback-guard.js';
import { parseAllowedOrigins } from '../../runtime/local-server-guard.js';
import { createLogger, type Logger } from '../../observability/logger.js';
import type { DevConsole } from '../../console/index.js';
import type { WorkerConfig } from '../../config/types.js';
import { parseConsoleOptions, withConsoleOptions, type ConsoleCliOptions } from '../console-options.js';
import type { CliContext } from '../context.js';
import { EMULATOR_DEFAULTS, curlHints, parseLogLevel, printHints } from '../emulator-defaults.js';
import { booleanFlag, booleanFlagValue, pickRunFlags, withRunOptions } from '../run-options.js';
import { loadCreateClient, type DemoClient, type StartWorker } from '../seams.js';
import { runWorkerProcess } from '../worker-process.js';
import { withHandlerReload } from '../dev-reload.js';
import { startEmulatorFromArgs, withEmulatorOptions, type EmulatorArgs } from './emulator.js';

/**
 * The worker in dev always talks to its own emulator: connection options are not offered, and
 * DURABLE_WORKER_* connection env vars meant for a real platform are ignored, so `dev` can never
 * consume a production destination by accident.
 */
const CONNECTION_KEYS = ['baseUrl', 'authUrl', 'tenant', 'clientId', 'clientSecret', 'clientSecretFile', 'apiKey'] as const;

/**
 * The example handler folder shipped in the package (package.json "files"), resolved from this
 * module (src/cli/commands/ or dist/cli/commands/, both three levels below the package root), not
 * from the working directory. `dev` falls back to it so that `npx durable-worker dev --demo` works
 * from any folder; `run` never does (a production worker must not run example handlers).
 */
const BUNDLED_HANDLERS_DIR = fileURLToPath(new URL('../../../handlers', import.meta.url));

/**
 * The handlers folder `dev` should default to: ./handlers when it exists or when the user named a
 * folder (flag, env var or --config: the configuration reports a missing one), else the bundled one.
 */
function bundledHandlersFallback(flags: Record<string, unknown>, env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  if (collectRunOptions({ flags, env, cwd }).values.handlers !== undefined) return undefined;
  return existsSync(resolve(cwd, 'handlers')) ? undefined : BUNDLED_HANDLERS_DIR;
}

const DEMO_SOURCE = 'demo-products';
const DEMO_INTERVAL_MS = 1_000;
const PRODUCTS = ['Kettle', 'Toaster', 'Teapot', 'Mug', 'Grinder'];

/** Ingests a small batch of sample entries every second until stopped. */
function startDemoTraffic(client: DemoClient, logger: Logger): () => void {
  let tick = 0;
  let inFlight = false;
  const timer = setInterval(() => {
    if (inFlight) return;
    inFlight = true;
    tick += 1;
    const entries = [0, 1].map((offset) => {
      const index = (tick * 2 + offset) % PRODUCTS.length;
      return {
        id: `product-${index + 1}`,
        properties: [
          { id: 'name', value: PRODUCTS[index] ?? 'Thing' },
          { id: 'price', value: Math.round((5 + ((tick * 7 + index) % 50)) * 100) / 100 + 0.5 },
          { id: 'inStock', value: tick % 3 !== 0 },
        ],
      };
    });
    client
      .ingest(DEMO_SOURCE, { entries })
      .then(() => logger.debug({ source: DEMO_SOURCE, entries: entries.length }, 'demo ingest'))
      .catch((err: unknown) => logger.warn({ err, source: DEMO_SOURCE }, 'demo ingest failed'))
      .finally(() => (inFlight = false));
  }, DEMO_INTERVAL_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    client.close().catch(() => {});
  };
}

/** The console, when on: created before the logger whose lines it taps and the threads that post theirs. */
async function openDevConsole(options: ConsoleCliOptions): Promise<DevConsole | undefined> {
  if (!options.enabled) return undefined;
  const { DevConsole } = await import('../../console/index.js');
  const devConsole = new DevConsole({ maxEvents: options.maxEvents });
  devConsole.shareWithThreads();
  return devConsole;
}

/** Starts the console's server for this worker configuration; returns its URL. */
function startDevConsole(
  devConsole: DevConsole,
  options: Extract<ConsoleCliOptions, { enabled: true }>,
  config: WorkerConfig,
  allowedOrigins: readonly string[],
  emulatorUrl: string,
  cwd: string,
  logger: Logger,
): Promise<string> {
  const { tenant, clientId, clientSecret } = EMULATOR_DEFAULTS;
  return devConsole.start({
    host: options.host,
    ...(config.allowedHosts === undefined ? {} : { allowedHosts: config.allowedHosts }),
    allowedOrigins,
    port: options.port,
    portIsDefault: options.portIsDefault,
    emulatorUrl,
    tenant,
    clientId,
    clientSecret,
    destination: config.destination,
    deadLetterUrl: config.deadLetterUrl,
    idempotencyPrefix: config.idempotencyPrefix,
    cwd,
    replay: {
      handlersDir: config.handlersDir,
      idempotencyUrl: config.idempotencyUrl,
      idempotencyTtlMs: config.idempotencyTtlMs,
      visibilitySeconds: config.visibilitySeconds,
      concurrency: config.concurrency,
      logLevel: config.logLevel,
      ...(config.handlerTimeoutMs === undefined ? {} : { handlerTimeoutMs: config.handlerTimeoutMs }),
      ...(config.forwardUrl === undefined ? {} : { forwardUrl: config.forwardUrl, forwardMode: config.forwardMode }),
    },
    logger: logger.child({ component: 'console' }),
  });
}

/** The worker start of `dev`: the real one, whose event bus the console then listens to. */
function startWorkerWithConsole(devConsole: DevConsole | undefined): StartWorker | undefined {
  if (devConsole === undefined) return undefined;
  return async (config, options) => {
    const { startWorker } = await import('../../worker/start.js');
    const worker = await startWorker(config, options);
    devConsole.attach(worker);
    return worker;
  };
}

export function devCommand(context: CliContext, setExitCode: (code: number) => void): CommandModule {
  return {
    builder: (yargs: Argv) =>
      withConsoleOptions(
        withRunOptions(withEmulatorOptions(yargs, `Emulator port (default: ${EMULATOR_DEFAULTS.port}; 0 = a random free port)`), CONNECTION_KEYS, {
          destination: `Event destination id: a durable consumer of the emulator (default: ${EMULATOR_DEFAULTS.destination})`,
        }),
      )
        .option('emulator-config', { type: 'string', requiresArg: true, describe: 'Emulator JSON config file', group: 'Emulator:' })
        .option('demo', booleanFlag(`Ingest sample entries into ${DEMO_SOURCE} every second`, 'Emulator:'))
        .option('watch', booleanFlag('Reload the handlers when a file under the handlers folder is saved (default: true; --no-watch to turn off)', 'Handlers:'))
        .example('$0 dev --demo', 'Emulator on :8787, worker with ./handlers (or the bundled example without one), sample traffic every second')
        .example('$0 dev --port 0 --metrics-port 0 --isolation none', 'Random ports, handlers in-process')
        .example('$0 dev --demo --no-console', 'Without the console (http://127.0.0.1:8788 by default)')
        .epilogue(
          `The worker uses tenant ${EMULATOR_DEFAULTS.tenant}, client ${EMULATOR_DEFAULTS.clientId} / ${EMULATOR_DEFAULTS.clientSecret}, destination ${EMULATOR_DEFAULTS.destination} and a SQLite idempotency store.`,
        ),
    handler: async (argv) => {
      const args = argv as EmulatorArgs & {
        demo?: unknown;
        watch?: unknown;
        emulatorConfig?: string;
        console?: unknown;
        consolePort?: unknown;
        consoleHost?: unknown;
        consoleEvents?: unknown;
      };
      const demo = booleanFlagValue(args.demo, '--demo');
      const watch = args.watch === undefined || booleanFlagValue(args.watch, '--watch');
      const consoleOptions = parseConsoleOptions(args);
      const env = { ...context.env };
      for (const key of CONNECTION_KEYS) delete env[envName(key)];

      // The log level of the worker options, known before the worker's own configuration is checked.
      // A bad level is reported by the worker's configuration below (exit 2); log at info until then.
      const requestedLevel = typeof argv.logLevel === 'string' ? argv.logLevel : env[envName('logLevel')];
      let logLevel = 'info';
      try {
        logLevel = parseLogLevel(requestedLevel);
      } catch {
        // reported below
      }
      const devConsole = await openDevConsole(consoleOptions);
      const logger = createLogger({
        level: logLevel,
        ...(context.stdout === process.stdout ? {} : { destination: context.stdout }),
        ...(devConsole === undefined ? {} : { tap: devConsole.tap }),
      });
      let emulator: Awaited<ReturnType<typeof startEmulatorFromArgs>>;
      let allowedHosts: string[];
      let allowedOrigins: string[];
      try {
        // One list for the emulator, the console and the metrics server (runtime/local-server-guard.ts).
        allowedHosts = parseAllowedHosts(collectRunOptions({ flags: pickRunFlags(argv), env, cwd: context.cwd }).values.allowedHosts);
        allowedOrigins = parseAllowedOrigins(args.allowedOrigins);
        emulator = await startEmulatorFromArgs({ ...args, allowedHosts }, context, args.emulatorConfig, logger.child({ component: 'emulator' }));
      } catch (err) {
        await devConsole?.close();
        throw err;
      }
      let stopDemo = () => {};
      try {
        const { tenant, clientId, clientSecret, destination } = EMULATOR_DEFAULTS;
        const flags = { ...pickRunFlags(argv), baseUrl: emulator.url, tenant, clientId, clientSecret };
        const bundledHandlers = bundledHandlersFallback(flags, env, context.cwd);
        // Metrics on loopback unless asked otherwise, and guarded like every local server of dev.
        const config = {
          ...loadWorkerConfig({
            flags,
            env,
            cwd: context.cwd,
            defaults: { destination, metricsHost: '127.0.0.1', ...(bundledHandlers !== undefined ? { handlers: bundledHandlers } : {}) },
          }),
          allowedHosts,
        };
        // A missing folder is the first thing to say, before any address or command to copy.
        if (!existsSync(config.handlersDir)) throw new ConfigError(`handlers folder ${config.handlersDir} does not exist (--handlers)`, '--handlers');
        logger.info({ url: emulator.url }, `emulator listening on ${emulator.url} (tenant ${tenant}, client ${clientId} / ${clientSecret})`);
        if (bundledHandlers !== undefined) {
          logger.info(
            { handlersDir: bundledHandlers },
            `no ./handlers folder here: using the example handlers bundled with durable-worker (${bundledHandlers}); create ./handlers or give --handlers for your own`,
          );
        }
        let consoleUrl: string | undefined;
        if (devConsole !== undefined && consoleOptions.enabled) {
          consoleUrl = await startDevConsole(devConsole, consoleOptions, config, allowedOrigins, emulator.url, context.cwd, logger);
          logger.info({ url: consoleUrl }, `console at ${consoleUrl}`);
        }
        // Meant to be copied into a browser or a shell: plain text on a terminal, records on a pipe.
        if (consoleUrl !== undefined)
          printHints(
            context.stdout,
            logger,
            `Open the console: ${consoleUrl}  (events, consumer, deferred, limits, dead letters, send; --no-console to turn it off)`,
          );
        printHints(context.stdout, logger, curlHints(emulator.url));
        if (demo) {
          const createClient = await loadCreateClient();
          stopDemo = startDemoTraffic(createClient({ baseUrl: emulator.url, tenant, clientId, clientSecret }), logger);
          logger.info({ source: DEMO_SOURCE }, `demo: ingesting sample entries into ${DEMO_SOURCE} every second`);
        }
        // The bundled example folder is part of the package: nothing there is edited.
        const start =
          watch && bundledHandlers === undefined ? await withHandlerReload(startWorkerWithConsole(devConsole), devConsole) : startWorkerWithConsole(devConsole);
        setExitCode(await runWorkerProcess(config, logger, context, start));
      } finally {
        stopDemo();
        await devConsole?.close();
        await emulator.close();
      }
    },
  };
}

import type { Argv, CommandModule } from 'yargs';
import { isAbsolute, resolve } from 'node:path';
import { createLogger } from '../../observability/logger.js';
import { parseAllowedHosts } from '../../runtime/loopback-guard.js';
import { parseAllowedOrigins } from '../../runtime/local-server-guard.js';
import type { CliContext } from '../context.js';
import { EMULATOR_DEFAULTS, curlHints, listenError, printHints, parseLogLevel, parsePort, parseTokenLifetimeSeconds } from '../emulator-defaults.js';
import type { RunningEmulator } from '../../emulator/index.js';
import type { Logger } from '../../observability/logger.js';
import { numberOption } from '../run-options.js';
import { loadStartEmulator } from '../seams.js';
import { SIGNAL_EXIT_CODES, onShutdownSignals } from '../signals.js';

export interface EmulatorArgs {
  port?: string;
  host?: string;
  config?: string;
  tokenLifetime?: string;
  logLevel?: string;
  /** `--allowed-hosts`: a string or list as given, checked here. */
  allowedHosts?: unknown;
  /** `--allowed-origins`: a string or list as given, checked here. */
  allowedOrigins?: unknown;
}

export function withEmulatorOptions<T>(yargs: Argv<T>, portDescription: string): Argv<T> {
  return yargs
    .option('port', numberOption(portDescription, 'Emulator:'))
    .option('host', { type: 'string', requiresArg: true, describe: `Interface to listen on (default: ${EMULATOR_DEFAULTS.host})`, group: 'Emulator:' })
    .option('token-lifetime', {
      type: 'string',
      requiresArg: true,
      describe: 'Lifetime of issued access tokens: seconds or a duration like 5m, 1h',
      group: 'Emulator:',
    })
    .option('allowed-origins', {
      type: 'string',
      requiresArg: true,
      describe:
        "Origins whose pages may change state besides the server's own (a local app driving the emulator from the browser), comma-separated, e.g. http://localhost:5173 (default: none)",
      group: 'Emulator:',
    });
}

/** Starts the emulator with the command's options; the config file is the emulator's own JSON. */
export async function startEmulatorFromArgs(
  args: EmulatorArgs,
  context: CliContext,
  emulatorConfigPath: string | undefined,
  logger: Logger,
): Promise<RunningEmulator> {
  const port = args.port === undefined ? EMULATOR_DEFAULTS.port : parsePort(args.port, '--port');
  const host = args.host ?? EMULATOR_DEFAULTS.host;
  const tokenLifetimeSeconds = parseTokenLifetimeSeconds(args.tokenLifetime);
  const allowedHosts = parseAllowedHosts(args.allowedHosts);
  const allowedOrigins = parseAllowedOrigins(args.allowedOrigins);
  const config = emulatorConfigPath === undefined ? undefined : isAbsolute(emulatorConfigPath) ? emulatorConfigPath : resolve(context.cwd, emulatorConfigPath);
  const startEmulator = await loadStartEmulator();
  try {
    return await startEmulator({
      port,
      host,
      allowedHosts,
      allowedOrigins,
      logger,
      ...(config !== undefined ? { config } : {}),
      ...(tokenLifetimeSeconds !== undefined ? { tokenLifetimeSeconds } : {}),
    });
  } catch (err) {
    throw await listenError(err, '--port', host, port);
  }
}

export function emulatorCommand(context: CliContext, setExitCode: (code: number) => void): CommandModule {
  return {
    builder: (yargs: Argv) =>
      withEmulatorOptions(yargs, `Port (default: ${EMULATOR_DEFAULTS.port}; 0 = a random free port)`)
        .option('config', { type: 'string', requiresArg: true, describe: 'Emulator JSON config file (tenants, applications, consumers...)' })
        .option('log-level', { type: 'string', requiresArg: true, describe: 'pino level (default: info)' })
        .option('allowed-hosts', {
          type: 'string',
          requiresArg: true,
          describe:
            'Host names the emulator answers besides localhost, 127.0.0.0/8 and [::1], comma-separated (the name other containers reach it by); .example.com allows every name below it',
          group: 'Emulator:',
        })
        .example(
          '$0 emulator',
          `Listen on http://${EMULATOR_DEFAULTS.host}:${EMULATOR_DEFAULTS.port} with client ${EMULATOR_DEFAULTS.clientId} / ${EMULATOR_DEFAULTS.clientSecret}`,
        )
        .example('$0 emulator --port 0 --token-lifetime 60', 'Random port, tokens that expire after a minute')
        .example('$0 emulator --host 0.0.0.0 --allowed-hosts emulator', 'In a container that other containers reach as http://emulator:8787'),
    handler: async (argv) => {
      const args = argv as EmulatorArgs;
      const logger = createLogger({ level: parseLogLevel(args.logLevel), ...(context.stdout === process.stdout ? {} : { destination: context.stdout }) });
      const emulator = await startEmulatorFromArgs(args, context, args.config, logger);
      const { tenant, clientId, clientSecret, destination } = EMULATOR_DEFAULTS;
      logger.info({ url: emulator.url }, `emulator listening on ${emulator.url}`);
      logger.info(`default credentials: tenant ${tenant}, client ${clientId} / ${clientSecret}; durable consumer ${destination}`);
      printHints(context.stdout, logger, curlHints(emulator.url));

      let dispose = () => {};
      await new Promise<void>((resolve) => {
        dispose = onShutdownSignals({
          first(signal) {
            logger.info({ signal }, 'stopping the emulator');
            resolve();
          },
          second(signal) {
            process.exit(SIGNAL_EXIT_CODES[signal]);
          },
        });
      });
      try {
        await emulator.close();
      } finally {
        dispose();
      }
      logger.info('emulator stopped');
      logger.flush();
      setExitCode(0);
    },
  };
}

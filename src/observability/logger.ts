import { hostname } from 'node:os';
import pino, { type DestinationStream, type Logger } from 'pino';
import { teeDestination } from './handler-log-tap.js';
import { loadPretty, showsDetails } from './pretty.js';

export { redactUrl } from '../runtime/redact-url.js';
export type { Logger } from 'pino';

/**
 * Every place a secret could ride into a log line: config objects, token responses, request and
 * response headers (undici options, problem details with the request attached). fast-redact
 * wildcards match one level, so the common nestings are listed explicitly.
 */
const SECRET_FIELDS = ['clientSecret', 'client_secret', 'apiKey', 'api_key', 'token', 'access_token', 'accessToken', 'password', 'secret'];
const HEADER_FIELDS = ['authorization', '["x-api-key"]', 'cookie'];

export const REDACT_PATHS: readonly string[] = [
  ...SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`]),
  ...HEADER_FIELDS.flatMap((h) => {
    const member = h.startsWith('[') ? h : `.${h}`;
    return [`headers${member}`, `*.headers${member}`, `*.*.headers${member}`, `req.headers${member}`, `request.headers${member}`];
  }),
  'config.clientSecret',
  'config.apiKey',
  'options.headers.authorization',
];

export interface CreateLoggerOptions {
  /** pino level (default: info). */
  level?: string;
  /** Human-readable output through pino-pretty when it is installed (default: stdout is a TTY). */
  pretty?: boolean;
  /** Where lines go (default: stdout). */
  destination?: DestinationStream | NodeJS.WritableStream;
  /** Bindings added to every line. */
  base?: Record<string, unknown>;
  /**
   * Also hands every serialised line (JSON, before pretty-printing) to this function: how `dev`'s
   * console sees the log lines of in-process handler runs (handler-log-tap.ts). Default: none.
   */
  tap?: (line: string) => void;
}

/** The process logger: structured JSON (or pretty on a terminal), secrets redacted by path. */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const pinoOptions = {
    level: options.level ?? 'info',
    base: { pid: process.pid, hostname: hostname(), ...options.base },
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
    serializers: { err: pino.stdSerializers.err },
  };
  const wantPretty = options.pretty ?? (options.destination === undefined && process.stdout.isTTY === true);
  const prettyStream = wantPretty
    ? loadPretty(options.destination ?? 1, options.destination === undefined && process.stdout.isTTY === true, showsDetails(options.level))
    : undefined;
  // Synchronous stdout by default: a CLI exits soon after its last line (signals, process.exit), and
  // lines must not interleave out of order with plain-text output on the same stream.
  const destination = (prettyStream ?? options.destination ?? pino.destination({ dest: 1, sync: true })) as DestinationStream;
  return pino(pinoOptions, options.tap === undefined ? destination : teeDestination(destination, options.tap));
}

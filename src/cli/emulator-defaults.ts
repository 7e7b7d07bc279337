import type { Logger } from 'pino';
import { ConfigError } from '../errors.js';
import { parseDurationMs } from '../runtime/duration.js';
import { LOG_LEVELS } from '../config/schema.js';

/** The emulator's development defaults (README.md, docs/client.md): not secrets, fine to print. */
export const EMULATOR_DEFAULTS = {
  port: 8787,
  host: '127.0.0.1',
  tenant: 'dev-tenant',
  clientId: 'dev-client',
  clientSecret: 'dev-secret',
  destination: 'dev-consumer',
} as const;

export function parsePort(value: unknown, option: string): number {
  const port = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new ConfigError(`${option} must be 0..65535 (got ${String(value)})`, option);
  }
  return port;
}

export function parseTokenLifetimeSeconds(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseDurationMs(typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value);
  if (ms === undefined || ms < 1_000) {
    throw new ConfigError(`--token-lifetime must be seconds or a duration like 90s, 1h (at least 1s) (got ${String(value)})`, '--token-lifetime');
  }
  return Math.round(ms / 1_000);
}

export { freePort, listenError } from '../runtime/listen-error.js';

/** Copy-pasteable commands to get a token and ingest by hand (spec: token form fields; typed ingest). */
export function curlHints(url: string): string {
  const { tenant, clientId, clientSecret } = EMULATOR_DEFAULTS;
  return [
    'Get a token and ingest by hand:',
    `  TOKEN=$(curl -s -X POST ${url}/oauth2/token -d grant_type=client_credentials -d client_id=${clientId} -d client_secret=${clientSecret} -d audience=${tenant} | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')`,
    `  curl -s -X POST ${url}/sources/demo-products -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"entries":[{"id":"p-1","properties":[{"id":"name","value":"Kettle"},{"id":"price","value":24.5}]}]}'`,
  ].join('\n');
}

/**
 * Text for a person to copy (a URL, shell commands), first line a title: as is on a terminal; on a
 * pipe or in a file a log record (title as msg, the rest as `lines`), since there every line of
 * stdout is one JSON object.
 */
export function printHints(stdout: NodeJS.WritableStream, logger: Logger, text: string): void {
  if ((stdout as { isTTY?: boolean }).isTTY === true) {
    logger.flush();
    stdout.write(`\n${text}\n`);
    return;
  }
  const [title = '', ...lines] = text.split('\n');
  logger.info({ lines: lines.map((line) => line.trim()) }, title);
}

/** A pino level, or a ConfigError naming the option. */
export function parseLogLevel(value: unknown, option = '--log-level'): string {
  if (value === undefined) return 'info';
  const level = String(value).trim().toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    throw new ConfigError(`${option} must be one of ${LOG_LEVELS.join(', ')} (got ${String(value)})`, option);
  return level;
}

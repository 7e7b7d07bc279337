import { ConfigError } from '../errors.js';
import type { HandlerLimits } from '../handlers/limits-options.js';
import { parseDurationMs } from '../runtime/duration.js';

/** What `--forward-rate` takes, for its messages. */
export const FORWARD_RATE_HELP = "MAX/PER (e.g. 40/1s, 600/1m), 'adaptive' (found from the app's 429s), or adaptive:MAX/PER (found, at most MAX/PER)";

const FIXED = /^(\d+)\/(.+)$/;

/** `--forward-rate` as the forwarding handler's rate and adaptivity, or undefined when it is not one. */
export function parseForwardRate(text: string): Pick<HandlerLimits, 'rate' | 'adaptive'> | undefined {
  const value = text.trim().toLowerCase();
  if (value === 'adaptive') return { adaptive: true };
  const adaptive = value.startsWith('adaptive:');
  const match = FIXED.exec(adaptive ? value.slice('adaptive:'.length) : value);
  if (match === null) return undefined;
  const max = Number(match[1]);
  // `1s` and also a bare unit (`40/s`, `600/m`): one of that unit.
  const per = /^\d/.test(match[2] as string) ? (match[2] as string) : `1${match[2]}`;
  const perMs = parseDurationMs(per);
  if (!Number.isInteger(max) || max < 1 || perMs === undefined || perMs < 1 || !/[a-z]$/.test(per)) return undefined;
  return { rate: { max, per: perMs }, adaptive };
}

/**
 * The forwarding handler's limits from `--forward-rate` and `--forward-concurrency` (undefined
 * without either); bad values were refused by the config schema, so a throw here is a bug's.
 */
export function forwardLimits(options: { rate?: string | undefined; concurrency?: number | undefined }): HandlerLimits | undefined {
  const limits: HandlerLimits = {};
  if (options.rate !== undefined) {
    const rate = parseForwardRate(options.rate);
    if (rate === undefined) throw new ConfigError(`--forward-rate must be ${FORWARD_RATE_HELP} (got ${JSON.stringify(options.rate)})`, '--forward-rate');
    Object.assign(limits, rate);
  }
  if (options.concurrency !== undefined) limits.concurrency = options.concurrency;
  return Object.keys(limits).length === 0 ? undefined : limits;
}

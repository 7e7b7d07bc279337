import { randomUUID } from 'node:crypto';

/**
 * JSON parsing that keeps integer literals beyond 2^53 exact (as `bigint`), so the 64-bit range of
 * Integer properties (spec, Limits) can be checked on the number the client wrote:
 * `9223372036854775807` is accepted and `9223372036854775808` rejected, where `JSON.parse` would
 * round both to 2^63. The reviver reads each number's source text (`JSON.parse` source-text access,
 * Node >= 21); a body without a run of 16 digits holds no unsafe integer and takes the plain path.
 */
const MARK = '\u0000bigint:';
const MARK_IN_JSON = '\\u0000bigint:';
const MAYBE_UNSAFE_INTEGER = /\d{16}/;
const INTEGER_SOURCE = /^-?\d+$/;

type SourceReviver = (key: string, value: unknown, context: { source?: string }) => unknown;

export function parseJsonExact(text: string): unknown {
  if (!MAYBE_UNSAFE_INTEGER.test(text)) return JSON.parse(text);
  const reviver: SourceReviver = (_key, value, context) =>
    typeof value === 'number' && !Number.isSafeInteger(value) && context.source !== undefined && INTEGER_SOURCE.test(context.source)
      ? BigInt(context.source)
      : value;
  return JSON.parse(text, reviver as (key: string, value: unknown) => unknown);
}

/**
 * `JSON.stringify` that writes a `bigint` as the exact integer literal (the reads of an Integer
 * property beyond 2^53, spec: "whole JSON number within the 64-bit integer range"), where
 * `JSON.stringify` throws. Values without a bigint take the plain path at its usual speed.
 */
export function stringifyJsonExact(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof TypeError) || !/BigInt/i.test(err.message)) throw err;
  }
  // The marker carries a per-process nonce, so a stored string can never be mistaken for it.
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${STRINGIFY_MARK}${v.toString()}` : v)).replace(STRINGIFIED_BIGINT, '$1');
}

const STRINGIFY_NONCE = randomUUID();
const STRINGIFY_MARK = `${MARK}${STRINGIFY_NONCE}:`;
const STRINGIFIED_BIGINT = new RegExp(`"${MARK_IN_JSON.replaceAll('\\', '\\\\')}${STRINGIFY_NONCE}:(-?\\d+)"`, 'g');

import { randomUUID } from 'node:crypto';

/**
 * JSON parsing that keeps integer literals beyond 2^53 exact (as `bigint`), so the 64-bit range of
 * Integer properties (spec, Limits) can be checked on the number the client wrote:
 * `9223372036854775807` is accepted and `9223372036854775808` rejected, where `JSON.parse` would
 * round both to 2^63. Node 20 has no `JSON.parse` source-text access, so unsafe integer literals are
 * rewritten into marked strings before parsing and turned into `bigint` by the reviver.
 */
const MARK = '\u0000bigint:';
const MARK_IN_JSON = '\\u0000bigint:';
const NUMBER_TOKEN = /-?\d+(\.\d+)?([eE][+-]?\d+)?/y;

export function parseJsonExact(text: string): unknown {
  // A client string equal to a marker would be misread; such (absurd) bodies use plain parsing.
  if (text.includes(MARK_IN_JSON)) return JSON.parse(text);
  const rewritten = markUnsafeIntegers(text);
  if (rewritten === text) return JSON.parse(text);
  return JSON.parse(rewritten, (_key, value: unknown) =>
    typeof value === 'string' && value.startsWith(MARK) ? BigInt(value.slice(MARK.length)) : value,
  );
}

function markUnsafeIntegers(text: string): string {
  let out = '';
  let copiedUpTo = 0;
  let index = 0;
  while (index < text.length) {
    const char = text[index]!;
    if (char === '"') {
      index = skipString(text, index);
      continue;
    }
    if (char === '-' || (char >= '0' && char <= '9')) {
      NUMBER_TOKEN.lastIndex = index;
      const match = NUMBER_TOKEN.exec(text);
      if (!match) {
        index++;
        continue;
      }
      const token = match[0];
      const isInteger = match[1] === undefined && match[2] === undefined;
      if (isInteger && !Number.isSafeInteger(Number(token))) {
        out += `${text.slice(copiedUpTo, index)}"${MARK_IN_JSON}${token}"`;
        copiedUpTo = index + token.length;
      }
      index += token.length;
      continue;
    }
    index++;
  }
  return copiedUpTo === 0 ? text : out + text.slice(copiedUpTo);
}

/** Index just past the closing quote of the string starting at `start` (or the end of text). */
function skipString(text: string, start: number): number {
  let index = start + 1;
  while (index < text.length) {
    const char = text[index];
    if (char === '\\') index += 2;
    else if (char === '"') return index + 1;
    else index++;
  }
  return index;
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

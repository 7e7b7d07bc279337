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

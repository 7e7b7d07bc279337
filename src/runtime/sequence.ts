/**
 * Stream order of two event sequences: decimal strings that grow by 1 (spec), compared by length
 * first, so there is no 2^53 limit. Negative when `x` comes first.
 */
export function compareSequences(x: string, y: string): number {
  return x.length - y.length || (x < y ? -1 : x > y ? 1 : 0);
}

/** "Did you mean": the names closest to a mistyped one, by edit distance. */

function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

/** The candidates within a third of `name`'s length (at least 2 edits) of it, closest first, at most 3. */
export function closestNames(name: string, candidates: Iterable<string>): string[] {
  const limit = Math.max(2, Math.floor(name.length / 3));
  return [...new Set(candidates)]
    .map((candidate) => ({ candidate, edits: distance(name.toLowerCase(), candidate.toLowerCase()) }))
    .filter(({ candidate, edits }) => candidate !== name && edits <= limit)
    .sort((x, y) => x.edits - y.edits || x.candidate.localeCompare(y.candidate))
    .slice(0, 3)
    .map(({ candidate }) => candidate);
}

/** `; did you mean a or b?` (empty when nothing is close), for a message about `name`. */
export function didYouMean(name: string, candidates: Iterable<string>): string {
  const close = closestNames(name, candidates);
  return close.length === 0 ? '' : `; did you mean ${close.map((c) => JSON.stringify(c)).join(' or ')}?`;
}

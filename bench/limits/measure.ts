/** Figures of bench/limits from the records its handler appends (handlers/limited.mjs). */

export interface Start {
  t: number;
  a: number;
  s: string;
  id: string;
  p: number;
}

export interface End {
  e: number;
  id: string;
  p: number;
}

/** The most entries of sorted `times` in any window [t, t + perMs). */
export function busiestWindow(times: readonly number[], perMs: number): number {
  const sorted = [...times].sort((x, y) => x - y);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while ((sorted[i] as number) - (sorted[j] as number) >= perMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/** Per subject, the busiest window; returns the worst subject and its count. */
export function busiestPerSubject(starts: readonly Start[], perMs: number): { subject: string; count: number } {
  const bySubject = new Map<string, number[]>();
  for (const start of starts) {
    const times = bySubject.get(start.s) ?? [];
    times.push(start.t);
    bySubject.set(start.s, times);
  }
  let worst = { subject: '', count: 0 };
  for (const [subject, times] of bySubject) {
    const count = busiestWindow(times, perMs);
    if (count > worst.count) worst = { subject, count };
  }
  return worst;
}

/**
 * The most runs in progress at once, from starts and ends; a run without an end (its process was
 * killed) ends at `killedAtMs` when its process is `killedPid`, else it is still running.
 */
export function mostAtOnce(starts: readonly Start[], ends: readonly End[], killed?: { pid: number; atMs: number }): number {
  const endOf = new Map(ends.map((end) => [`${end.p}:${end.id}`, end.e]));
  return mostOverlapping(
    starts.map((start) => [start.t, endOf.get(`${start.p}:${start.id}`) ?? (killed !== undefined && start.p === killed.pid ? killed.atMs : Infinity)]),
  );
}

/** The most of `[start, end)` intervals that overlap at any moment. */
export function mostOverlapping(intervals: readonly (readonly [number, number])[]): number {
  const points: [number, number][] = intervals.flatMap(
    ([start, end]) =>
      [
        [start, 1],
        [end, -1],
      ] as [number, number][],
  );
  // Ends before starts at the same instant: a permit released and taken in the same millisecond.
  points.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let now = 0;
  let most = 0;
  for (const [, delta] of points) most = Math.max(most, (now += delta));
  return most;
}

export function readRecords(text: string): { starts: Start[]; ends: End[] } {
  const starts: Start[] = [];
  const ends: End[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const value = JSON.parse(line) as Start | End;
    if ('e' in value) ends.push(value);
    else starts.push(value);
  }
  return { starts, ends };
}

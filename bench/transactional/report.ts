import type { RunResult } from './run.js';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const spread = (xs: number[], digits: number) => (xs.length < 2 ? '' : ` (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`);

/** A Markdown table: per isolation and variant, the median of the runs and their range. */
export function formatResults(results: readonly RunResult[]): string {
  const lines = [
    '| isolation | handler | events/s | CPU µs/event | server CPU µs/event | socket writes/event | PostgreSQL connections (most at once) | runs |',
    '|---|---|---|---|---|---|---|---|',
  ];
  const keys = [...new Set(results.map((r) => `${r.isolation} ${r.variant}`))];
  for (const key of keys) {
    const runs = results.filter((r) => `${r.isolation} ${r.variant}` === key);
    const rate = runs.map((r) => r.eventsPerSecond);
    const cpu = runs.map((r) => r.cpuUsPerEvent);
    const server = runs.map((r) => r.serverCpuUsPerEvent);
    const writes = runs.map((r) => r.writesPerEvent);
    const conns = runs.map((r) => r.maxConnections);
    const names = [...new Set(runs.flatMap((r) => Object.keys(r.maxConnectionsByName)))]
      .sort()
      .map((n) => `${n} ${Math.max(...runs.map((r) => r.maxConnectionsByName[n] ?? 0))}`)
      .join(', ');
    lines.push(
      `| ${runs[0]!.isolation} | ${runs[0]!.variant} | ${Math.round(median(rate))}${spread(rate, 0)} | ${median(cpu).toFixed(1)}${spread(cpu, 1)} | ${median(server).toFixed(1)}${spread(server, 1)} | ${median(writes).toFixed(2)} | ${Math.max(...conns)}: ${names} | ${runs.length} |`,
    );
  }
  return lines.join('\n');
}

/** Each transactional variant's events/s over its plain variant's of the same round and isolation: median (range). */
export function formatRatios(results: readonly RunResult[]): string {
  const lines: string[] = [];
  for (const [tx, plain] of [
    ['tx', 'plain'],
    ['tx-batch', 'plain-batch'],
  ] as const) {
    for (const isolation of [...new Set(results.map((r) => r.isolation))]) {
      const ratios: number[] = [];
      for (const run of results.filter((r) => r.variant === tx && r.isolation === isolation)) {
        const other = results.find((r) => r.variant === plain && r.isolation === isolation && r.round === run.round);
        if (other !== undefined) ratios.push(run.eventsPerSecond / other.eventsPerSecond);
      }
      if (ratios.length > 0) lines.push(`${isolation} ${tx} / ${plain}: ${median(ratios).toFixed(2)}x${spread(ratios, 2)} over ${ratios.length} round(s)`);
    }
  }
  return lines.join('\n');
}

/**
 * The handlers' limits measured against the done-when of the limits (docs/benchmarks.md#limits):
 * replicas of `durable-worker run` (the built dist/) on a shared Redis or PostgreSQL store, the
 * emulator in a process of its own, every event waiting before the replicas start.
 *
 *   npm run bench:limits -- [--only rate|perkey|concurrency|adaptive] [--redis URL] [--postgres URL] [--keep]
 *
 * rate: 1,200 events, `rate: { max: 40, per: '1s' }`, two replicas: the busiest 1 s window, the span
 * of the run against the pace (30 s) + 25 % + 3 s, attempts, dead letters, committed, exits.
 * perkey: 50 subjects x 30 events, `perKey: { key: subject, rate: { max: 2, per: '1s' } }`.
 * concurrency: 400 events of 300 ms, `concurrency: 4`, two replicas, one SIGKILLed at 3 s
 * (--visibility 10): the most runs at once, and when the killed replica's permits came back.
 * adaptive: the forwarding handler with `--forward-rate adaptive` against a stub that answers 429
 * above 60 calls a second (then 120).
 * Defaults: --redis $REDIS_URL, --postgres $DATABASE_URL.
 */
import { parseArgs } from 'node:util';
import { runAdaptive } from './adaptive.js';
import { killReplicas } from './replicas.js';
import { mostAtOnce, runReplicas } from './scenarios.js';

const { values } = parseArgs({
  options: { only: { type: 'string' }, redis: { type: 'string' }, postgres: { type: 'string' }, keep: { type: 'boolean', default: false } },
});
const only = values.only;
if (only !== undefined && !['rate', 'perkey', 'concurrency', 'adaptive'].includes(only)) {
  process.stderr.write(`bench:limits: --only must be rate, perkey, concurrency or adaptive (got ${only})\n`);
  process.exit(2);
}
const stores = [values.redis ?? process.env.REDIS_URL, values.postgres ?? process.env.DATABASE_URL].filter((s): s is string => s !== undefined && s !== '');
if (stores.length === 0) {
  process.stderr.write('bench:limits: give --redis or --postgres (or REDIS_URL, DATABASE_URL)\n');
  process.exit(2);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killReplicas();
    process.exit(130);
  });
}
const out = (line: string) => process.stdout.write(`${line}\n`);
const yes = (ok: boolean) => (ok ? 'yes' : 'NO');
const storeName = (url: string) => url.split(':')[0];
out(`node ${process.version}, ${process.platform} ${process.arch}`);

if (only === undefined || only === 'rate') {
  out(
    '\n| store | events | busiest 1 s window (<= 41) | span s (<= 40.5) | replicas start to exit s | attempts > 1 | dead letters | committed = head | exits |',
  );
  out('|---|---|---|---|---|---|---|---|---|');
  for (const store of stores) {
    const r = await runReplicas({
      scenario: 'rate',
      store,
      subjects: Array.from({ length: 1_200 }, (_, i) => `s${i}`),
      replicas: 2,
      timeoutMs: 120_000,
      keep: values.keep,
    });
    out(
      `| ${storeName(store)} | ${r.distinctRuns}/${r.events} | ${r.busiest} ${yes(r.busiest <= 41)} | ${r.spanSeconds.toFixed(1)} ${yes(r.spanSeconds <= 40.5)} | ${r.wallSeconds.toFixed(1)} | ${r.attemptsAbove1} | ${r.deadLetters} | ${yes(r.committed === r.head)} (${r.committed}/${r.head}) | ${r.exits.join(', ')} |`,
    );
  }
}

if (only === undefined || only === 'perkey') {
  out(
    '\n| store | events | worst subject in 1 s (<= 3) | busiest 1 s overall | span s (<= 21.75) | start to exit s | attempts > 1 | dead letters | committed = head | exits |',
  );
  out('|---|---|---|---|---|---|---|---|---|---|');
  const subjects = Array.from({ length: 1_500 }, (_, i) => `k${i % 50}`);
  for (const store of stores) {
    const r = await runReplicas({ scenario: 'perkey', store, subjects, replicas: 2, timeoutMs: 120_000, keep: values.keep });
    const worst = r.worstSubject ?? { subject: '', count: 0 };
    out(
      `| ${storeName(store)} | ${r.distinctRuns}/${r.events} | ${worst.count} (${worst.subject}) ${yes(worst.count <= 3)} | ${r.busiest} | ${r.spanSeconds.toFixed(1)} ${yes(r.spanSeconds <= 21.75)} | ${r.wallSeconds.toFixed(1)} | ${r.attemptsAbove1} | ${r.deadLetters} | ${yes(r.committed === r.head)} | ${r.exits.join(', ')} |`,
    );
  }
}

if (only === undefined || only === 'concurrency') {
  out('\n| store | N | most at once before the kill | most at once overall | runs at N again after the kill, s | events run | exits (survivor) |');
  out('|---|---|---|---|---|---|---|');
  for (const store of stores) {
    let killed: { pid: number; atMs: number } | undefined;
    const r = await runReplicas({
      scenario: 'concurrency',
      store,
      subjects: Array.from({ length: 400 }, (_, i) => `c${i}`),
      replicas: 2,
      extraArgs: ['--visibility', '10'],
      env: { BENCH_CONCURRENCY: '4', BENCH_HOLD_MS: '300' },
      timeoutMs: 120_000,
      keep: values.keep,
      during: async (replicas, startedAtMs) => {
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAtMs + 3_000 - Date.now())));
        const victim = replicas[0]!;
        killed = { pid: victim.pid, atMs: Date.now() };
        victim.child.kill('SIGKILL');
      },
    });
    const { starts, ends } = r.records;
    const before = mostAtOnce(
      starts.filter((s) => killed === undefined || s.t < killed.atMs),
      ends,
      killed,
    );
    const overall = mostAtOnce(starts, ends, killed);
    // After the kill: the first moment the survivor alone holds 4 runs at once.
    let backAfterS = Number.NaN;
    if (killed !== undefined) {
      const survivor = starts.filter((s) => s.p !== killed!.pid && s.t >= killed!.atMs).sort((x, y) => x.t - y.t);
      for (const start of survivor) {
        if (
          mostAtOnce(
            survivor.filter((s) => s.t <= start.t),
            ends.filter((e) => e.e <= start.t),
          ) >= 4
        ) {
          backAfterS = (start.t - killed.atMs) / 1_000;
          break;
        }
      }
    }
    out(
      `| ${storeName(store)} | 4 | ${before} ${yes(before <= 4)} | ${overall} ${yes(overall <= 4)} | ${backAfterS.toFixed(1)} (lease 10 s) | ${r.distinctRuns}/${r.events} | ${r.exits[1]} |`,
    );
  }
}

if (only === undefined || only === 'adaptive') {
  out('\n| store | 429 share after 10 s (< 5 %) | ok/s after 10 s (>= 48) | ok/s, last 10 s after the stub allows 120 |');
  out('|---|---|---|---|');
  for (const store of stores.slice(0, 1)) {
    const r = await runAdaptive({ store });
    out(
      `| ${storeName(store)} | ${(r.throttledShare * 100).toFixed(1)} % ${yes(r.throttledShare < 0.05)} | ${r.okPerSecond.toFixed(1)} ${yes(r.okPerSecond >= 48)} | ${r.okPerSecondAfterRaise.toFixed(1)} |`,
    );
    out(`per second (ok/429): ${r.perSecond.map((s) => `${s.ok}/${s.throttled}`).join(' ')}`);
  }
}

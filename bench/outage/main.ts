/**
 * Failures that heal, measured: a dependency outage in a steady stream, and a poison subject in a
 * saturated one, against `durable-worker run` as a fresh process (the built dist/) with default
 * settings, the emulator in a process of its own. Its figures:
 * docs/benchmarks.md#failures-and-retries.
 *
 *   npm run bench:outage -- [--only outage|poison|isolation|waits] [--latency-ms 50] [--skip-no-breaker] [--keep]
 *                          [--isolation-seconds 15] [--store redis://...] [--handler-isolation thread,none]
 *
 * isolation: two handlers, one's dependency down; the healthy one's events' timeliness before and
 * during, both with two types and with one shared type, on the SQLite store (and --store's).
 * waits: events asking to wait 15 s amid others (their timeliness, when the waiting ones ran again),
 * and 1,000 events with first-run failures and 3 poison events (how long until all is done).
 *
 * Each scenario runs on loopback and again with --latency-ms added before every pull and ack
 * (0: loopback only); the outage also once with --no-breaker (loopback) unless --skip-no-breaker.
 */
import { parseArgs } from 'node:util';
import { runOutage } from './outage.js';
import { runPoison } from './poison.js';
import { killLiveChildren } from './processes.js';
import { runIsolation } from './isolation.js';
import { formatFailOnce, formatIsolation, formatLater, formatOutage, formatPoison } from './report.js';
import { runFailOnce, runLater } from './waits.js';

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    'latency-ms': { type: 'string', default: '50' },
    'skip-no-breaker': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    'isolation-seconds': { type: 'string', default: '15' },
    store: { type: 'string' },
    'handler-isolation': { type: 'string', default: 'thread' },
  },
});
const only = values.only;
if (only !== undefined && only !== 'outage' && only !== 'poison' && only !== 'isolation' && only !== 'waits') {
  process.stderr.write(`bench:outage: --only must be outage, poison, isolation or waits (got ${only})\n`);
  process.exit(2);
}
const latencyMs = Number(values['latency-ms']);
if (!Number.isInteger(latencyMs) || latencyMs < 0) {
  process.stderr.write(`bench:outage: --latency-ms must be an integer >= 0 (got ${values['latency-ms']})\n`);
  process.exit(2);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killLiveChildren();
    process.exit(130);
  });
}

const latencies = latencyMs > 0 ? [0, latencyMs] : [0];
const label = (ms: number) => (ms === 0 ? 'loopback' : `latency ${ms} ms`);
const out = (text: string) => process.stdout.write(`${text}\n\n`);
out(`node ${process.version}, ${process.platform} ${process.arch}`);
if (only === undefined || only === 'outage') {
  for (const ms of latencies) out(formatOutage(label(ms), await runOutage({ latencyMs: ms, keepDir: values.keep })));
  if (!values['skip-no-breaker']) out(formatOutage('loopback, --no-breaker', await runOutage({ breaker: false, keepDir: values.keep })));
}
if (only === undefined || only === 'poison') {
  for (const ms of latencies) out(formatPoison(label(ms), await runPoison({ latencyMs: ms, keepDir: values.keep })));
}
if (only === undefined || only === 'isolation') {
  const outageSeconds = Number(values['isolation-seconds']);
  if (!Number.isInteger(outageSeconds) || outageSeconds < 1) {
    process.stderr.write(`bench:outage: --isolation-seconds must be an integer >= 1 (got ${values['isolation-seconds']})\n`);
    process.exit(2);
  }
  const produceSeconds = 10 + outageSeconds + 10;
  const modes = (values['handler-isolation'] ?? 'thread').split(',');
  if (modes.some((m) => m !== 'thread' && m !== 'none')) {
    process.stderr.write(`bench:outage: --handler-isolation takes thread, none or both (got ${values['handler-isolation']})\n`);
    process.exit(2);
  }
  for (const store of [undefined, ...(values.store === undefined ? [] : [values.store])]) {
    for (const mode of modes) {
      for (const sharedType of [false, true]) {
        for (const ms of latencies) {
          const result = await runIsolation({
            sharedType,
            latencyMs: ms,
            outageSeconds,
            produceSeconds,
            workerArgs: ['--isolation', mode],
            ...(store === undefined ? {} : { idempotencyUrl: store }),
            keepDir: values.keep,
          });
          out(formatIsolation(`${label(ms)}, ${mode}`, result));
        }
      }
    }
  }
}
if (only === undefined || only === 'waits') {
  for (const ms of latencies) out(formatLater(label(ms), await runLater({ latencyMs: ms })));
  for (const ms of latencies) out(formatFailOnce(label(ms), await runFailOnce(ms)));
}

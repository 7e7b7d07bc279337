/**
 * Chaos run: faults, SIGKILLs and a pause against two `durable-worker run` processes
 * sharing one idempotency store; prints a one-screen report and exits 1 when a promise broke.
 *
 *   npm run chaos -- [--seed N] [--events 2000] [--produce-seconds 8] [--min-kills 2]
 *                    [--kill-min-ms 1500] [--kill-max-ms 4000] [--isolation thread|none]
 *                    [--store redis://...] [--from source|dist] [--drain-timeout 120] [--keep]
 *
 * Without --seed a random seed is drawn and printed first; pass it back to replay the run.
 */
import { parseArgs } from 'node:util';
import { formatReport } from './report.js';
import { DEFAULT_CHAOS, runChaos, type ChaosOptions } from './run.js';
import { killLiveChildren } from './workers.js';

function int(name: string, value: string | undefined, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min} (got ${value})`);
  return n;
}

function parse(argv: string[]): Partial<ChaosOptions> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string' },
      events: { type: 'string' },
      'produce-seconds': { type: 'string' },
      'min-kills': { type: 'string' },
      'kill-min-ms': { type: 'string' },
      'kill-max-ms': { type: 'string' },
      processes: { type: 'string' },
      workers: { type: 'string' },
      visibility: { type: 'string' },
      isolation: { type: 'string' },
      store: { type: 'string' },
      from: { type: 'string' },
      'drain-timeout': { type: 'string' },
      keep: { type: 'boolean', default: false },
    },
  });
  const d = DEFAULT_CHAOS;
  const isolation = values.isolation ?? d.isolation;
  if (isolation !== 'thread' && isolation !== 'none') throw new Error(`--isolation must be thread or none (got ${isolation})`);
  const from = values.from ?? d.from;
  if (from !== 'source' && from !== 'dist') throw new Error(`--from must be source or dist (got ${from})`);
  const killMinMs = int('kill-min-ms', values['kill-min-ms'], d.killMinMs, 100);
  const killMaxMs = int('kill-max-ms', values['kill-max-ms'], d.killMaxMs, killMinMs);
  return {
    seed: int('seed', values.seed, Math.floor(Math.random() * 2 ** 31)),
    events: int('events', values.events, d.events, 1),
    produceSeconds: int('produce-seconds', values['produce-seconds'], d.produceSeconds, 1),
    minKills: int('min-kills', values['min-kills'], d.minKills),
    killMinMs,
    killMaxMs,
    processes: int('processes', values.processes, d.processes, 1),
    workersPerProcess: int('workers', values.workers, d.workersPerProcess, 1),
    visibilitySeconds: int('visibility', values.visibility, d.visibilitySeconds, 3),
    isolation,
    from,
    drainTimeoutSeconds: int('drain-timeout', values['drain-timeout'], d.drainTimeoutSeconds, 1),
    keepDir: values.keep,
    ...(values.store === undefined ? {} : { store: values.store }),
  };
}

// Interrupted: take the worker processes down with the runner.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killLiveChildren();
    process.exit(130);
  });
}

try {
  const options = parse(process.argv.slice(2));
  process.stdout.write(`chaos seed ${options.seed}\n`);
  const report = await runChaos(options, (line) => process.stdout.write(`  ${line}\n`));
  process.stdout.write(`\n${formatReport(report)}\n`);
  process.exitCode = report.verdict.failures.length === 0 ? 0 : 1;
} catch (err) {
  process.stderr.write(`chaos: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}

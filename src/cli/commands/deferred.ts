import type { Argv, CommandModule } from 'yargs';
import { collectRunOptions, loadWorkerConfig } from '../../config/load.js';
import { deferredRunsOf, type DeferredRun, type DeferredRuns } from '../../idempotency/deferred.js';
import type { RunOptionKey } from '../../config/options.js';
import { ConfigError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { booleanFlag, booleanFlagValue, numberOption, pickRunFlags, withRunOptions } from '../run-options.js';

type Args = Record<string, unknown>;

/** Options `deferred` has no use for: no platform call is made. */
const UNUSED = ['clientId', 'clientSecret', 'clientSecretFile', 'apiKey', 'baseUrl', 'authUrl'] as const;
/** The run options that locate the deferred runs. */
const SHOWN = ['tenant', 'destination', 'idempotencyPrefix', 'idempotency', 'idempotencyTtl'] as const satisfies readonly RunOptionKey[];
const OPTION_HELP = {
  destination: 'Event destination id: the runs of prefix <tenant>:<destination> (or give --idempotency-prefix)',
} as const;

/**
 * Opens the store of the worker's configuration (read as `run` reads it) and its deferred runs,
 * closing it whatever happens. The runs are kept per --idempotency-prefix, which is needed.
 */
async function withDeferred<T>(
  argv: Args,
  context: CliContext,
  action: (deferred: DeferredRuns, mark: (keys: string[]) => Promise<void>) => Promise<T>,
): Promise<T> {
  const base = { flags: pickRunFlags(argv), env: context.env, cwd: context.cwd, omit: UNUSED };
  const given = collectRunOptions(base).values;
  if (given.destination === undefined && given.idempotencyPrefix === undefined) {
    throw new ConfigError('deferred needs --destination (or --idempotency-prefix): deferred runs are kept per prefix <tenant>:<destination>', '--destination');
  }
  const config = loadWorkerConfig({
    ...base,
    defaults: { baseUrl: 'http://127.0.0.1', apiKey: 'unused', ...(given.destination === undefined ? { destination: 'unused' } : {}) },
  });
  const { createIdempotencyStore } = await import('../../idempotency/index.js');
  const store = await createIdempotencyStore(config.idempotencyUrl, { prefix: config.idempotencyPrefix, doneTtlMs: config.idempotencyTtlMs });
  try {
    const deferred = deferredRunsOf(store);
    if (deferred === undefined)
      throw new ConfigError(
        'the memory store holds no deferred runs (its runs wait in their lease): give --idempotency sqlite:, redis:// or postgres://',
        '--idempotency',
      );
    return await action(deferred, (keys) => store.markDone(keys));
  } finally {
    await store.close();
  }
}

function keysOf(argv: Args): string[] {
  const raw = argv.keys ?? [];
  return (Array.isArray(raw) ? raw : [raw]).map(String);
}

/** The table of `deferred list`: one run a row, in chain order. */
export function deferredTable(runs: readonly DeferredRun[], nowMs: number): string {
  const seconds = (ms: number) => `${Math.round(ms / 100) / 10}s`;
  const headers = ['KEY', 'HANDLER', 'SUBJECT', 'SEQUENCE', 'REASON', 'DUE', 'AGE'];
  const rows = runs.map((r) => [
    r.key,
    r.handler,
    r.event.subject,
    r.sequence,
    r.reason,
    r.retryAtMs <= nowMs ? 'now' : `in ${seconds(r.retryAtMs - nowMs)}`,
    seconds(nowMs - r.deferredAtMs),
  ]);
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join('\n')}\n`;
}

async function list(argv: Args, context: CliContext): Promise<void> {
  const limit = argv.limit === undefined ? 1_000 : Number(argv.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) throw new ConfigError(`--limit must be 1..100000 (got ${String(argv.limit)})`, '--limit');
  const json = booleanFlagValue(argv.json, '--json');
  await withDeferred(argv, context, async (deferred) => {
    const runs = await deferred.list({ limit, ...(argv.handler === undefined ? {} : { handler: String(argv.handler) }) });
    if (json) for (const run of runs) context.stdout.write(`${JSON.stringify(run)}\n`);
    else if (runs.length === 0) context.stdout.write('no deferred run\n');
    else context.stdout.write(deferredTable(runs, Date.now()));
  });
}

async function runNow(argv: Args, context: CliContext): Promise<number> {
  const keys = keysOf(argv);
  return withDeferred(argv, context, async (deferred) => {
    let missing = 0;
    for (const key of keys) {
      if (await deferred.reschedule(key, Date.now())) context.stdout.write(`due now: ${key} (a running worker starts it when it is first of its chain)\n`);
      else {
        missing++;
        context.stderr.write(`no deferred run ${key}\n`);
      }
    }
    return missing === 0 ? 0 : 1;
  });
}

async function drop(argv: Args, context: CliContext): Promise<number> {
  const keys = keysOf(argv);
  if (!booleanFlagValue(argv.yes, '--yes'))
    throw new ConfigError('drop needs --yes: the handler never runs these events (their keys are marked done)', '--yes');
  return withDeferred(argv, context, async (deferred, markDone) => {
    const found: string[] = [];
    for (const key of keys) {
      if ((await deferred.get(key)) !== undefined) found.push(key);
      else context.stderr.write(`no deferred run ${key}\n`);
    }
    // Done first: a redelivery of the event then skips it, whatever happens to the removal.
    if (found.length > 0) {
      await markDone(found);
      await deferred.remove(found);
    }
    for (const key of found) context.stdout.write(`dropped ${key}\n`);
    return found.length === keys.length ? 0 : 1;
  });
}

const KEYS_PARSING = { 'duplicate-arguments-array': true } as const;

/** `durable-worker deferred list | run-now | drop`: the runs waiting in the store (docs/operations.md, "Deferred runs"). */
export function deferredCommand(context: CliContext, setExitCode: (code: number) => void): CommandModule {
  const run = (action: (argv: Args) => Promise<number | void>) => async (argv: Args) => setExitCode((await action(argv)) ?? 0);
  const withOptions = (y: Argv) =>
    withRunOptions(y, [], OPTION_HELP, SHOWN).epilogue(
      "Every run option is read as `run` reads it (flags, DURABLE_WORKER_* env vars, --config): point the command at the worker's own configuration (the options not listed here are accepted and have no effect). Exit codes: 0 done, 1 a key had no deferred run, 2 bad input.",
    );
  return {
    builder: (yargs: Argv) =>
      yargs
        .command({
          command: 'list',
          describe: 'Deferred runs in chain order (table; JSON lines with --json)',
          builder: (y: Argv) =>
            withOptions(y)
              .option('handler', { type: 'string', describe: "Only this handler's runs", group: 'Filters:', requiresArg: true })
              .option('limit', numberOption('At most this many runs, 1..100000 (default: 1000)', 'Output:'))
              .option('json', booleanFlag('One JSON object per line: the whole run, its event included', 'Output:')),
          handler: run((argv) => list(argv, context)),
        })
        .command({
          command: 'run-now <keys..>',
          describe: 'Make deferred runs due now (keys: <handler>:<event id>, as `deferred list` shows them)',
          builder: (y: Argv) => withOptions(y.parserConfiguration(KEYS_PARSING)),
          handler: run((argv) => runNow(argv, context)),
        })
        .command({
          command: 'drop <keys..>',
          describe: 'Give deferred runs up: removed, their keys marked done (the handler never runs them)',
          builder: (y: Argv) => withOptions(y.parserConfiguration(KEYS_PARSING)).option('yes', booleanFlag('Needed: dropping cannot be undone', 'Output:')),
          handler: run((argv) => drop(argv, context)),
        })
        .demandCommand(1, 'a subcommand is required: list, run-now or drop (see --help)'),
    handler: () => {},
  };
}

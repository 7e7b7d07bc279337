import { createInterface } from 'node:readline/promises';
import type { Argv, CommandModule } from 'yargs';
import type { DeadLetters } from '../../dead-letter-admin/api.js';
import type { RunOptionKey } from '../../config/options.js';
import type { DeadLetterFilter } from '../../dead-letter/query.js';
import { ConfigError, ErrorCodes, hasCode } from '../../errors.js';
import { HANDLER_LOG_FD_ENV } from '../../observability/handler-log-tap.js';
import { createLogger } from '../../observability/logger.js';
import { redactUrl } from '../../runtime/redact-url.js';
import type { CliContext } from '../context.js';
import { booleanFlag, booleanFlagValue, numberOption, withRunOptions } from '../run-options.js';
import { hasFilter, loadDeadLetterConfig, parseDuration, parseFilter, type DeadLetterCommandConfig } from './dead-letters-config.js';
import { hintHandler, isTerminal, jsonLine, printTable, ProgressBar, ReplayTally, resultLine, watchBrokenPipe } from './dead-letters-output.js';

/** Exit codes of `dead-letters` (README.md), for scripts: 0 all done, 1 some replay failed, 2 bad input. */
const REPLAY_FAILED = 1;

type Args = Record<string, unknown> & { ids?: unknown; id?: unknown };

const FILTER_GROUP = 'Filters:';
const ALL_PREFIXES_HELP =
  'Without --idempotency-prefix: take the records of every prefix of a shared sink (otherwise a sink holding several refuses, naming them)';

function withFilters<T>(yargs: Argv<T>): Argv<T> {
  const option = (describe: string) => ({ type: 'string' as const, describe, group: FILTER_GROUP, requiresArg: true });
  return yargs
    .option('handler', option('Handler name, exactly (e.g. orders/created, @forward)'))
    .option('type', option("Event type: exact, 'prefix.*' or '*'"))
    .option('reason', option('permanent | max-attempts'))
    .option('state', option('dead | replayed | purged | all (list: all by default; replay runs dead records only)'))
    .option('since', option('Dead-lettered at or after: ISO time, or a duration ago (30m, 2h, 7d)'))
    .option('until', option('Dead-lettered before: ISO time, or a duration ago'));
}

/** The tenant and destination only narrow the records read: no platform call is made. */
const SINK_OPTION_HELP = {
  tenant: 'Tenant: with --destination, reads the records of prefix <tenant>:<destination> (default: every prefix)',
  destination: 'Event destination id: reads the records of prefix <tenant>:<destination> (default: every prefix of the sink)',
} as const;

/** The run options that locate the records (and, for a replay, run the handlers). */
const SINK_OPTIONS = ['tenant', 'destination', 'idempotencyPrefix', 'idempotency', 'deadLetter'] as const satisfies readonly RunOptionKey[];
const REPLAY_OPTIONS = [
  ...SINK_OPTIONS,
  'handlers',
  'forwardUrl',
  'forwardMode',
  'handlerTimeout',
  'isolation',
  'visibility',
  'concurrency',
  'idempotencyTtl',
  'logLevel',
] as const satisfies readonly RunOptionKey[];

/** `--config` and the `run` options, read from the same sources as `run`; --help lists those in `shown`. */
function withSinkOptions<T>(yargs: Argv<T>, shown: readonly RunOptionKey[] = SINK_OPTIONS): Argv<T> {
  return withRunOptions(yargs, [], SINK_OPTION_HELP, shown).epilogue(
    "Every run option is read as `run` reads it (flags, DURABLE_WORKER_* env vars, --config): point the command at the worker's own configuration (the options not listed here are accepted and have no effect). " +
      'Records are kept per --idempotency-prefix (default <tenant>:<destination>); without either, every prefix of the sink is read. ' +
      'Exit codes: 0 done, 1 some replay failed (records stay dead), 2 bad input.',
  );
}

/**
 * `[ids..]` needs yargs' arrays of repeated arguments, which the CLI turns off (a flag given twice:
 * the last one wins). These subcommands turn them on for the ids and keep that rule for the flags.
 */
const IDS_PARSING = { 'duplicate-arguments-array': true } as const;

function lastOfRepeatedFlags(argv: Args): Args {
  const out: Args = {};
  for (const [key, value] of Object.entries(argv)) out[key] = key !== 'ids' && key !== '_' && Array.isArray(value) ? value[value.length - 1] : value;
  return out;
}

function idsOf(argv: Args): string[] {
  const raw = argv.ids ?? [];
  return (Array.isArray(raw) ? raw : [raw]).map(String);
}

/** Opens the sink of the configuration for one subcommand, closing it whatever happens. */
async function withSink<T>(argv: Args, context: CliContext, action: (sink: DeadLetters, loaded: DeadLetterCommandConfig) => Promise<T>): Promise<T> {
  const loaded = loadDeadLetterConfig(argv, context);
  const { openDeadLetters } = await import('../../dead-letter-admin/api.js');
  const sink = await openDeadLetters(loaded.config.deadLetterUrl, { ...(loaded.prefix === undefined ? {} : { prefix: loaded.prefix }), cwd: context.cwd });
  try {
    return await action(sink, loaded);
  } finally {
    await sink.close();
  }
}

async function list(argv: Args, context: CliContext): Promise<void> {
  const filter = parseFilter(argv);
  const json = booleanFlagValue(argv.json, '--json');
  const terminal = isTerminal(context.stdout);
  const pageSize = argv.pageSize === undefined ? (terminal && !json ? 50 : undefined) : Number(argv.pageSize);
  if (pageSize !== undefined && (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 10_000)) {
    throw new ConfigError(`--page-size must be 1..10000 (got ${String(argv.pageSize)})`, '--page-size');
  }
  await withSink(argv, context, async (sink) => {
    if (pageSize === undefined) {
      // Every record, streamed page by page: a pipe gets them all (or as many as it reads).
      const broken = watchBrokenPipe(context.stdout);
      const records = [];
      let count = 0;
      for await (const record of sink.all(filter)) {
        if (broken()) return;
        count += 1;
        if (json) context.stdout.write(jsonLine(record));
        else records.push(record);
      }
      if (!json) printTable(context.stdout, records);
      if (count === 0) await hintHandler(sink, filter, context);
      return;
    }
    const page = await sink.list({ ...filter, limit: pageSize, ...(argv.after === undefined ? {} : { after: String(argv.after) }) });
    if (json) for (const record of page.records) context.stdout.write(jsonLine(record));
    else printTable(context.stdout, page.records);
    if (page.records.length === 0) await hintHandler(sink, filter, context);
    if (page.next !== undefined) context.stderr.write(`more records: add --after ${page.next}\n`);
  });
}

async function show(argv: Args, context: CliContext): Promise<void> {
  const id = String(argv.id);
  await withSink(argv, context, async (sink) => {
    const record = await sink.get(id);
    if (record === undefined)
      throw new ConfigError(`no dead-letter record ${JSON.stringify(id)} (ids are <handler>:<event id>, as \`dead-letters list\` shows them)`);
    context.stdout.write(booleanFlagValue(argv.json, '--json') ? jsonLine(record) : `${JSON.stringify(record, null, 2)}\n`);
  });
}

function selectionOf(argv: Args): { ids: string[] } | DeadLetterFilter {
  const ids = idsOf(argv);
  const filter = parseFilter(argv);
  if (ids.length > 0 && hasFilter(filter)) throw new ConfigError('give record ids or filters, not both', '--handler');
  return ids.length > 0 ? { ids } : filter;
}

async function replay(argv: Args, context: CliContext): Promise<number> {
  const selection = selectionOf(argv);
  const dryRun = booleanFlagValue(argv.dryRun, '--dry-run');
  const json = booleanFlagValue(argv.json, '--json');
  const allPrefixes = booleanFlagValue(argv.allPrefixes, '--all-prefixes');
  // Replay asks nothing; --yes is accepted (and checked) so one script line serves replay and purge.
  booleanFlagValue(argv.yes, '--yes');
  return withSink(argv, context, async (sink, { config, replayIdempotencyUrl }) => {
    const logger = createLogger({ level: config.logLevel, destination: context.stderr, pretty: isTerminal(context.stderr) });
    const terminal = isTerminal(context.stdout) && !json;
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
    // The handlers' own lines go where this command's log goes (stderr), never into the table on
    // stdout: in-process runs log through `logger`, handler threads read the env var when they start.
    const logFdBefore = process.env[HANDLER_LOG_FD_ENV];
    process.env[HANDLER_LOG_FD_ENV] = '2';
    let tally = new ReplayTally(0);
    let bar: ProgressBar | undefined;
    try {
      const report = await replayOrBadInput(sink, selection, {
        dryRun,
        allPrefixes,
        handlersDir: config.handlersDir,
        isolation: config.isolation,
        idempotencyUrl: replayIdempotencyUrl,
        idempotencyTtlMs: config.idempotencyTtlMs,
        visibilitySeconds: config.visibilitySeconds,
        concurrency: config.concurrency,
        ...(config.handlerTimeoutMs === undefined ? {} : { handlerTimeoutMs: config.handlerTimeoutMs }),
        ...(config.forwardUrl === undefined ? {} : { forwardUrl: config.forwardUrl, forwardMode: config.forwardMode }),
        logger,
        logLevel: config.logLevel,
        signal: stop.signal,
        onStart: (total) => {
          tally = new ReplayTally(total);
          if (terminal) (bar = new ProgressBar(context.stdout, tally)).draw();
        },
        onResult: (result) => {
          tally.add(result);
          if (json) context.stdout.write(`${JSON.stringify(result)}\n`);
          else if (bar === undefined) context.stdout.write(resultLine(result));
          else if (result.outcome === 'failed' || result.outcome === 'purged') bar.note(resultLine(result));
          else bar.draw();
        },
      });
      bar?.end();
      if (dryRun) {
        if (json) for (const record of report.selected) context.stdout.write(jsonLine(record));
        else printTable(context.stdout, report.selected);
        context.stdout.write(`${report.selected.length} record(s) would be replayed (--dry-run: nothing ran)\n`);
        return 0;
      }
      if (report.selected.length === 0) context.stdout.write('nothing to replay: no record in state dead matches\n');
      if (report.selected.length === 0 && !('ids' in selection)) await hintHandler(sink, selection, context);
      else if (!json) context.stdout.write(tally.summary());
      return report.ok ? 0 : REPLAY_FAILED;
    } finally {
      bar?.end();
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      if (logFdBefore === undefined) delete process.env[HANDLER_LOG_FD_ENV];
      else process.env[HANDLER_LOG_FD_ENV] = logFdBefore;
    }
  });
}

/** A handlers folder that cannot be loaded is the user's setup, as for `run`: bad input (exit 2). */
async function replayOrBadInput(sink: DeadLetters, ...args: Parameters<DeadLetters['replay']>): ReturnType<DeadLetters['replay']> {
  try {
    return await sink.replay(...args);
  } catch (err) {
    if (hasCode(err, ErrorCodes.HANDLER_LOAD)) throw new ConfigError(err instanceof Error ? err.message : String(err), '--handlers', { cause: err });
    throw err;
  }
}

/** On a terminal, asks; elsewhere `--yes` must say it. */
async function confirmPurge(context: CliContext, count: number, sinkUrl: string, yes: boolean): Promise<boolean> {
  if (yes) return true;
  if (!isTerminal(context.stdout) || process.stdin.isTTY !== true) {
    throw new ConfigError('purge needs --yes when not run on a terminal (it cannot ask)', '--yes');
  }
  const prompt = createInterface({ input: process.stdin, output: context.stdout });
  try {
    const answer = await prompt.question(`purge ${count} record(s) of ${redactUrl(sinkUrl)}? Their event data is dropped. [y/N] `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    prompt.close();
  }
}

async function purge(argv: Args, context: CliContext): Promise<void> {
  const selection = selectionOf(argv);
  const olderThanMs = parseDuration('--older-than', argv.olderThan);
  if ('ids' in selection && olderThanMs !== undefined) throw new ConfigError('give record ids or --older-than, not both', '--older-than');
  const yes = booleanFlagValue(argv.yes, '--yes');
  await withSink(argv, context, async (sink, { config }) => {
    const allPrefixes = booleanFlagValue(argv.allPrefixes, '--all-prefixes');
    const options = olderThanMs === undefined ? { allPrefixes } : { olderThanMs, allPrefixes };
    const selected = await sink.selectForPurge(selection, options);
    if (selected.length === 0) {
      context.stdout.write('nothing to purge: no record matches\n');
      return;
    }
    if (!(await confirmPurge(context, selected.length, config.deadLetterUrl, yes))) {
      context.stdout.write('not purged\n');
      return;
    }
    const purged = await sink.purge(selection, options);
    for (const record of purged) context.stdout.write(`purged ${record.id}\n`);
    context.stdout.write(`${purged.length} record(s) purged\n`);
  });
}

export function deadLettersCommand(context: CliContext, setExitCode: (code: number) => void): CommandModule {
  const run = (action: (argv: Args) => Promise<number | void>) => async (argv: Args) => setExitCode((await action(lastOfRepeatedFlags(argv))) ?? 0);
  return {
    builder: (yargs: Argv) =>
      yargs
        .command({
          command: 'list',
          describe: 'List records (table; JSON lines with --json), oldest first',
          builder: (y: Argv) =>
            withSinkOptions(withFilters(y))
              .option('json', booleanFlag('One JSON object per line: the whole record', 'Output:'))
              .option('page-size', numberOption('Records per page, 1..10000 (default: 50 on a terminal, all otherwise)', 'Output:'))
              .option('after', { type: 'string', describe: 'Cursor of the next page, as the previous page printed it', group: 'Output:', requiresArg: true })
              .example('$0 dead-letters list --state dead', 'What waits for a fix')
              .example('$0 dead-letters list --json --handler orders/created --since 2h', 'As JSON lines, one handler, the last two hours'),
          handler: run((argv) => list(argv, context)),
        })
        .command({
          command: 'show <id>',
          describe: 'Print one record, whole (id: <handler>:<event id>)',
          builder: (y: Argv) => withSinkOptions(y).option('json', booleanFlag('On one line', 'Output:')),
          handler: run((argv) => show(argv, context)),
        })
        .command({
          command: 'replay [ids..]',
          describe: 'Run the current handlers on records in state dead (these ids, or all matching the filters)',
          builder: (y: Argv) =>
            withSinkOptions(withFilters(y.parserConfiguration(IDS_PARSING)), REPLAY_OPTIONS)
              .option('all-prefixes', booleanFlag(ALL_PREFIXES_HELP, FILTER_GROUP))
              .option('dry-run', booleanFlag('List what would be replayed; run nothing', 'Output:'))
              .option('json', booleanFlag('One JSON object per record replayed', 'Output:'))
              .option('yes', booleanFlag('Accepted as purge takes it; replay never asks', 'Output:'))
              .example('$0 dead-letters replay --dry-run', 'What a replay would run')
              .example('$0 dead-letters replay --handler orders/created', 'Every dead record of one handler, after fixing it'),
          handler: run((argv) => replay(argv, context)),
        })
        .command({
          command: 'purge [ids..]',
          describe: 'Mark records purged and drop their event data (these ids, or all matching the filters or --older-than)',
          builder: (y: Argv) =>
            withSinkOptions(withFilters(y.parserConfiguration(IDS_PARSING)))
              .option('all-prefixes', booleanFlag(ALL_PREFIXES_HELP, FILTER_GROUP))
              .option('older-than', { type: 'string', describe: 'Dead-lettered longer ago than this: 30d, 12h', group: FILTER_GROUP, requiresArg: true })
              .option('yes', booleanFlag('Do not ask (needed when not on a terminal)', 'Output:'))
              .example('$0 dead-letters purge --older-than 30d --yes', 'Drop what nobody replayed in a month'),
          handler: run((argv) => purge(argv, context)),
        })
        .demandCommand(1, 'a subcommand is required: list, show, replay or purge (see --help)'),
    handler: () => {},
  };
}

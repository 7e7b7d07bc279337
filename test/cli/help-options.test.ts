/**
 * Every command's --help against the option table (src/config/options.ts): the run options each
 * command lists (only those that apply to it), their types ([number] for numbers, [string] for
 * text and durations, no type for flags), "(required)" only where `run` requires it, and the
 * defaults `run --help` states are the ones the configuration resolves to.
 */
import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../../src/config/load.js';
import { RUN_OPTIONS, toKebab, type RunOptionKey } from '../../src/config/options.js';
import { runCli } from './cli-process.js';

interface HelpOption {
  text: string;
  type: string | undefined;
}

/** `--name -> its description and labels`, continuation lines joined. */
function parseHelp(help: string): Map<string, HelpOption> {
  const options = new Map<string, HelpOption>();
  let current: string | undefined;
  for (const line of help.split('\n')) {
    // An option starts at column 6 (2 with a short alias); its description wraps deeper.
    const start = /^(?: {6}| {2}-\w, )--([a-z0-9-]+)\s+(.*)$/.exec(line);
    if (start !== null) {
      current = start[1]!;
      options.set(current, { text: start[2]!, type: undefined });
    } else if (current !== undefined && /^\s{10,}\S/.test(line)) options.get(current)!.text += ` ${line.trim()}`;
    else current = undefined;
  }
  for (const option of options.values()) {
    option.text = option.text.replace(/\s+/g, ' ');
    option.type = /\[(string|number|boolean|array|count)\]/.exec(option.text)?.[1];
  }
  return options;
}

const ALL = RUN_OPTIONS.map((o) => o.key);
const CONNECTION: RunOptionKey[] = ['baseUrl', 'authUrl', 'tenant', 'clientId', 'clientSecret', 'clientSecretFile', 'apiKey'];
const SINK: RunOptionKey[] = ['tenant', 'destination', 'idempotencyPrefix', 'idempotency', 'deadLetter'];
const REPLAY: RunOptionKey[] = [
  ...SINK,
  'handlers',
  'forwardUrl',
  'forwardMode',
  'handlerTimeout',
  'isolation',
  'visibility',
  'concurrency',
  'idempotencyTtl',
  'logLevel',
];
const DEFERRED: RunOptionKey[] = ['tenant', 'destination', 'idempotencyPrefix', 'idempotency', 'idempotencyTtl'];

/** Each command, and the run options its --help lists. */
const COMMANDS: Array<[string[], RunOptionKey[]]> = [
  [['run'], ALL],
  [['check'], ALL],
  [['dev'], ALL.filter((key) => !CONNECTION.includes(key))],
  // Their own options of the same name and kind: the emulator's --log-level and --allowed-hosts, init's --otel.
  [['emulator'], ['logLevel', 'allowedHosts']],
  [['init'], ['otel']],
  [['dead-letters', 'list'], SINK],
  [['dead-letters', 'show'], SINK],
  [['dead-letters', 'purge'], SINK],
  [['dead-letters', 'replay'], REPLAY],
  [['deferred', 'list'], DEFERRED],
  [['deferred', 'run-now'], DEFERRED],
  [['deferred', 'drop'], DEFERRED],
];

const RUN_FLAGS = new Map(RUN_OPTIONS.map((o) => [toKebab(o.key), o]));
const helps = new Map<string, Promise<Map<string, HelpOption>>>();
const helpOf = (command: string[]) => {
  const key = command.join(' ');
  if (!helps.has(key))
    helps.set(
      key,
      runCli([...command, '--help']).then((r) => (expect(r.code, r.stderr).toBe(0), parseHelp(r.stdout))),
    );
  return helps.get(key)!;
};

describe('--help of every command, against the option table', () => {
  it.each(COMMANDS)('%s lists the run options that apply to it, typed as the table says', async (command, shown) => {
    const help = await helpOf(command);
    const listed = [...help.keys()].filter((flag) => RUN_FLAGS.has(flag)).sort();
    expect(listed).toEqual(shown.map(toKebab).sort());
    for (const flag of listed) {
      const spec = RUN_FLAGS.get(flag)!;
      const { type, text } = help.get(flag)!;
      expect({ flag, type }).toEqual({ flag, type: spec.kind === 'boolean' ? undefined : spec.kind });
      // Only `run` requires anything; dev fills the destination, check and the admin commands need none.
      const required = command[0] === 'run' && (flag === 'base-url' || flag === 'destination');
      expect({ flag, required: /\(required\)|\[required\]/.test(text) }).toEqual({ flag, required });
    }
    // Every other number-like option of the command is typed as a number too.
    for (const [flag, { type }] of help)
      if (/^(port|console-port|console-events|page-size|limit)$/.test(flag)) expect({ flag, type }).toEqual({ flag, type: 'number' });
  });

  it('the defaults run --help states are the ones the configuration resolves to', async () => {
    const help = await helpOf(['run']);
    const config = loadWorkerConfig({ flags: { baseUrl: 'http://127.0.0.1:1', destination: 'd', apiKey: 'k' }, env: {}, cwd: process.cwd() });
    const resolved: Partial<Record<RunOptionKey, unknown>> = {
      workers: config.workers,
      limit: config.limit,
      visibility: config.visibilitySeconds,
      concurrency: config.concurrency,
      maxAttempts: config.maxAttempts,
      breakerFailureRatio: config.breakerFailureRatio,
      breakerWindow: config.breakerWindow,
      metricsPort: config.metricsPort,
      shutdownTimeout: config.shutdownTimeoutSeconds,
      logLevel: config.logLevel,
      isolation: config.isolation,
      forwardMode: config.forwardMode,
      metricsHost: config.metricsHost,
    };
    for (const [key, value] of Object.entries(resolved)) {
      const stated = /\(default: ([^);,]+)[);,]/.exec(help.get(toKebab(key))!.text)?.[1];
      expect({ key, stated }).toEqual({ key, stated: String(value) });
    }
  });

  it('hidden run options are still accepted by the commands that do not list them', async () => {
    const result = await runCli([
      'dead-letters',
      'list',
      '--base-url',
      'http://127.0.0.1:1',
      '--client-id',
      'x',
      '--limit',
      '5',
      '--dead-letter',
      'file:/nonexistent-dw/dl.jsonl',
    ]);
    expect(result.stderr).not.toMatch(/Unknown argument/);
    expect(result.code, result.stderr).toBe(0);
  });
});

/**
 * `durable-worker dead-letters list|show|replay|purge` as a real process (CONTRACT: names, flags,
 * exit codes 0 / 1 some replay failed / 2 bad input), reading the configuration as `run` does. The
 * terminal cases run under a real pseudo-terminal from `script` (util-linux).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { openDeadLetterStore } from '../../src/dead-letter/index.js';
import type { DeadLetterRecord, StoredDeadLetter } from '../../src/dead-letter/sink.js';
import { deadLetter } from '../dead-letter/contract.js';
import { REPO_ROOT, runCli, type CliResult } from './cli-process.js';

const FIXED = fileURLToPath(new URL('../fixtures/replay-handlers', import.meta.url));
const BROKEN = fileURLToPath(new URL('../fixtures/replay-handlers-broken', import.meta.url));
const LOGGING = fileURLToPath(new URL('../fixtures/replay-handlers-logging', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'dw-cli-dead-letters-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let dir: string;
let count = 0;
beforeEach(() => {
  dir = join(root, `t${++count}`);
});

const sinkArgs = () => ['--dead-letter', `file:${join(dir, 'dead-letter.jsonl')}`, '--idempotency', `sqlite:${join(dir, 'idempotency.sqlite')}`];
const env = () => ({ DW_TEST_EFFECTS_FILE: join(dir, 'effects.log') });

function order(eventId: string, data: Record<string, unknown> = { poison: true }, extra: Partial<DeadLetterRecord> = {}): DeadLetterRecord {
  return deadLetter({ eventId, handler: 'orders', data, ...extra });
}

async function seed(prefix: string, ...records: DeadLetterRecord[]): Promise<void> {
  const sink = await openDeadLetterStore(`file:${join(dir, 'dead-letter.jsonl')}`, { prefix });
  for (const record of records) await sink.write(record);
  await sink.close();
}

function dl(args: string[], extraEnv: Record<string, string> = {}): Promise<CliResult> {
  return runCli(['dead-letters', ...args], { env: { ...env(), ...extraEnv }, cwd: dir.replace(/\/t\d+$/, '') });
}

function jsonLines(text: string): StoredDeadLetter[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as StoredDeadLetter);
}

/** Bad input: exit 2 and one line on stderr naming what is wrong. */
function expectBadInput(result: CliResult, message: string | RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
  expect(result.stderr).toMatch(message);
}

describe('dead-letters list and show', () => {
  it('lists JSON lines with id, handler, reason, state and the whole event; a table otherwise; filters', async () => {
    const at = (i: number) => new Date(Date.now() - 60_000 + i * 1_000).toISOString();
    await seed(
      't:c',
      order('o-1', { poison: true }, { deadLetteredAt: at(0) }),
      order('o-2', {}, { reason: 'permanent', event: { ...order('o-2').event, type: 'orders.cancelled' }, deadLetteredAt: at(1) }),
      deadLetter({ eventId: 'a-1', handler: 'audit', deadLetteredAt: at(2) }),
    );
    const json = await dl(['list', '--json', ...sinkArgs()]);
    expect(json.code, json.stderr).toBe(0);
    const records = jsonLines(json.stdout);
    expect(records.map((r) => [r.id, r.handler, r.reason, r.state])).toEqual([
      ['orders:o-1', 'orders', 'max-attempts', 'dead'],
      ['orders:o-2', 'orders', 'permanent', 'dead'],
      ['audit:a-1', 'audit', 'max-attempts', 'dead'],
    ]);
    expect(records[0]!.event).toMatchObject({ id: 'o-1', type: 'orders.created', data: { poison: true } });

    const table = await dl(['list', ...sinkArgs()]);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+STATE\s+REASON\s+TYPE\s+DEAD-LETTERED\s+ERROR$/);
    expect(table.stdout).toMatch(/^orders:o-2\s+dead\s+permanent\s+orders\.cancelled\s+\S+Z\s+handler failed on o-2$/m);

    const filtered = await dl([
      'list',
      '--json',
      '--handler',
      'orders',
      '--type',
      'orders.*',
      '--reason',
      'max-attempts',
      '--state',
      'dead',
      '--since',
      '1h',
      ...sinkArgs(),
    ]);
    expect(jsonLines(filtered.stdout).map((r) => r.id)).toEqual(['orders:o-1']);
    const paged = await dl(['list', '--json', '--page-size', '2', ...sinkArgs()]);
    expect(jsonLines(paged.stdout)).toHaveLength(2);
    const after = /--after (\S+)/.exec(paged.stderr)?.[1];
    expect(after, paged.stderr).toBeDefined();
    expect(jsonLines((await dl(['list', '--json', '--page-size', '2', '--after', after!, ...sinkArgs()])).stdout).map((r) => r.id)).toEqual(['audit:a-1']);

    const shown = await dl(['show', 'orders:o-2', ...sinkArgs()]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      id: 'orders:o-2',
      prefix: 't:c',
      state: 'dead',
      event: { id: 'o-2' },
      error: { message: 'handler failed on o-2' },
    });
  }, 60_000);

  it('a --handler no record has: nothing listed or replayed, and the closest handler names on stderr', async () => {
    await seed('t:c', order('o-1'), deadLetter({ eventId: 'o-2', handler: 'orders/created', data: {} }));
    const list = await dl(['list', '--handler', 'orders/craeted', ...sinkArgs()]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stderr).toBe('no record of handler "orders/craeted"; did you mean "orders/created"?\n');
    const json = await dl(['list', '--json', '--handler', 'order', ...sinkArgs()]);
    expect(json.stdout).toBe('');
    expect(json.stderr).toBe('no record of handler "order"; did you mean "orders"?\n');
    const replay = await dl(['replay', '--yes', '--handlers', FIXED, '--handler', 'ordres', ...sinkArgs()]);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toContain('nothing to replay');
    expect(replay.stderr).toContain('no record of handler "ordres"; did you mean "orders"?');
    // A name with records: no hint; a name far from every other: no guess.
    expect((await dl(['list', '--handler', 'orders', ...sinkArgs()])).stderr).toBe('');
    expect((await dl(['list', '--handler', 'billing/refunds', ...sinkArgs()])).stderr).toBe('no record of handler "billing/refunds"\n');
  }, 60_000);

  it('bad input exits 2 with one line', async () => {
    await seed('t:c', order('o-1'));
    expectBadInput(await dl(['list', '--reason', 'bogus', ...sinkArgs()]), '--reason must be one of permanent, max-attempts (got bogus)');
    expectBadInput(await dl(['list', '--type', 'a*b', ...sinkArgs()]), /--type '\*' is only allowed/);
    expectBadInput(await dl(['list', '--since', 'yesterday', ...sinkArgs()]), /--since must be an ISO time/);
    expectBadInput(await dl(['list', '--dead-letter', 'redis://:s3cret@'], {}), /^durable-worker: --dead-letter must be .* \(got redis:\/\/:\*\*\*@\)$/m);
    expectBadInput(await dl(['show', 'orders:missing', ...sinkArgs()]), 'no dead-letter record "orders:missing"');
    expectBadInput(await dl(['list', '--after', 'garbage', '--page-size', '5', ...sinkArgs()]), /not a page cursor/);
    expectBadInput(await dl([]), 'a subcommand is required: list, show, replay or purge');
    expectBadInput(await dl(['list', '--bogus', ...sinkArgs()]), 'unknown option --bogus');
  }, 60_000);

  it("reads the worker's own configuration: env vars and --config, without its credentials; the prefix from tenant and destination", async () => {
    await seed('acme:orders-consumer', order('mine'));
    await seed('other:consumer', order('theirs'));
    const config = join(root, `worker-${count}.json`);
    writeFileSync(
      config,
      JSON.stringify({
        baseUrl: 'https://api.example.com',
        tenant: 'acme',
        destination: 'orders-consumer',
        clientId: 'id',
        clientSecretFile: '/run/secrets/only-in-the-pod',
        deadLetter: `file:${join(dir, 'dead-letter.jsonl')}`,
      }),
    );
    const fromFile = await dl(['list', '--json', '--config', config]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(jsonLines(fromFile.stdout).map((r) => r.event.id)).toEqual(['mine']);
    const fromEnv = await dl(['list', '--json'], {
      DURABLE_WORKER_DEAD_LETTER: `file:${join(dir, 'dead-letter.jsonl')}`,
      DURABLE_WORKER_IDEMPOTENCY_PREFIX: 'other:consumer',
    });
    expect(jsonLines(fromEnv.stdout).map((r) => r.event.id)).toEqual(['theirs']);
    // Neither: every prefix.
    expect(
      jsonLines((await dl(['list', '--json', ...sinkArgs()])).stdout)
        .map((r) => r.prefix)
        .sort(),
    ).toEqual(['acme:orders-consumer', 'other:consumer']);
  }, 60_000);
});

describe('dead-letters replay and purge', () => {
  it('replay: --dry-run runs nothing; a failing handler exits 1, records stay dead; fixed, exit 0, a second replay runs nothing', async () => {
    await seed('t:c', order('o-1', { poison: true }, { deadLetteredAt: new Date(Date.now() - 1_000).toISOString() }), order('o-2'));
    const dry = await dl(['replay', '--dry-run', '--handlers', FIXED, '--isolation', 'none', ...sinkArgs()]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('2 record(s) would be replayed (--dry-run: nothing ran)');

    const broken = await dl(['replay', '--handlers', BROKEN, '--isolation', 'none', ...sinkArgs()]);
    expect(broken.code, broken.stdout + broken.stderr).toBe(1);
    expect(broken.stdout).toMatch(/^failed\s+orders:o-1 \(t:c\): poison order o-1/m);
    expect(jsonLines((await dl(['list', '--json', ...sinkArgs()])).stdout).map((r) => r.state)).toEqual(['dead', 'dead']);

    const fixed = await dl(['replay', 'orders:o-2', 'orders:o-1', '--handlers', FIXED, ...sinkArgs()]);
    expect(fixed.code, fixed.stdout + fixed.stderr).toBe(0);
    expect(fixed.stdout).toContain('2 of 2 record(s): 2 replayed');
    expect(readFileSync(join(dir, 'effects.log'), 'utf8').split('\n').filter(Boolean)).toHaveLength(2);
    const again = await dl(['replay', '--handlers', FIXED, ...sinkArgs()]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('nothing to replay');
    expect(jsonLines((await dl(['list', '--json', '--state', 'replayed', ...sinkArgs()])).stdout)).toHaveLength(2);
    expect(readFileSync(join(dir, 'effects.log'), 'utf8').split('\n').filter(Boolean)).toHaveLength(2);
    expectBadInput(await dl(['replay', 'orders:o-1', '--handler', 'orders', ...sinkArgs()]), 'give record ids or filters, not both');
    await seed('t:c', order('o-3'));
    expectBadInput(await dl(['replay', '--handlers', join(dir, 'no-such-folder'), ...sinkArgs()]), /handlers folder .*no-such-folder does not exist/);
    // A flag given twice: the last one wins, as everywhere in the CLI.
    const twice = await dl(['replay', '--dry-run', '--state', 'bogus', '--state', 'dead', '--handlers', FIXED, ...sinkArgs()]);
    expect(twice.code, twice.stderr).toBe(0);
  }, 90_000);

  it("replay keeps the handlers' log lines out of its table (stderr, both isolations); --state all lists every state", async () => {
    await seed('t:c', order('o-1'), order('o-2'), order('o-3'));
    for (const [id, isolation] of [
      ['orders:o-1', 'thread'],
      ['orders:o-2', 'none'],
    ] as const) {
      const result = await dl(['replay', id, '--handlers', LOGGING, '--isolation', isolation, ...sinkArgs()]);
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain('1 of 1 record(s): 1 replayed');
      expect(result.stdout).not.toContain('replaying order');
      expect(result.stderr).toContain(`replaying order ${id.slice('orders:'.length)}`);
    }
    // Its help says where the values come from: nothing of the connection is required here.
    const help = await dl(['replay', '--help']);
    expect(help.stdout).not.toContain('(required');
    expect(help.stdout).toMatch(/--destination\s+Event destination id: reads the records of prefix <tenant>:<destination>/);
    const all = await dl(['list', '--json', '--state', 'all', ...sinkArgs()]);
    expect(all.code, all.stderr).toBe(0);
    expect(
      jsonLines(all.stdout)
        .map((r) => r.state)
        .sort(),
    ).toEqual(['dead', 'replayed', 'replayed']);
  }, 90_000);

  it('purge: needs a selection, and --yes off a terminal; drops the data', async () => {
    await seed('t:c', order('old', { card: '4111' }, { deadLetteredAt: new Date(Date.now() - 40 * 86_400_000).toISOString() }), order('new'));
    expectBadInput(await dl(['purge', ...sinkArgs()]), /purge needs record ids, a filter .* or --older-than/);
    expectBadInput(await dl(['purge', '--older-than', '30d', ...sinkArgs()]), 'purge needs --yes when not run on a terminal');
    expectBadInput(await dl(['purge', '--older-than', 'a month', '--yes', ...sinkArgs()]), '--older-than must be a duration');
    const purged = await dl(['purge', '--older-than', '30d', '--yes', ...sinkArgs()]);
    expect(purged.code, purged.stderr).toBe(0);
    expect(purged.stdout).toBe('purged orders:old\n1 record(s) purged\n');
    const records = jsonLines((await dl(['list', '--json', ...sinkArgs()])).stdout);
    expect(records.map((r) => [r.id, r.state])).toEqual([
      ['orders:old', 'purged'],
      ['orders:new', 'dead'],
    ]);
    expect(JSON.stringify(records[0])).not.toContain('4111');
  }, 60_000);
});

describe('dead-letters replay and purge on a sink of several prefixes', () => {
  it('refuse without a prefix, naming the prefixes (exit 2, nothing run or dropped); a prefix or --all-prefixes chooses', async () => {
    await seed('acme:orders', order('a-1'));
    await seed('other:orders', order('b-1'));
    const named = /the sink holds the records of 2 prefixes \(acme:orders, other:orders\): give --idempotency-prefix .* or --all-prefixes to take them all/;
    expectBadInput(await dl(['replay', '--handlers', FIXED, '--isolation', 'none', ...sinkArgs()]), named);
    expectBadInput(await dl(['replay', '--dry-run', '--handlers', FIXED, ...sinkArgs()]), named);
    expectBadInput(await dl(['purge', '--older-than', '0s', '--yes', ...sinkArgs()]), named);
    expect(jsonLines((await dl(['list', '--json', ...sinkArgs()])).stdout).map((r) => r.state)).toEqual(['dead', 'dead']);
    expect(() => readFileSync(join(dir, 'effects.log'), 'utf8')).toThrow();

    const one = await dl(['replay', '--handlers', FIXED, '--isolation', 'none', '--idempotency-prefix', 'acme:orders', ...sinkArgs()]);
    expect(one.code, one.stdout + one.stderr).toBe(0);
    expect(one.stdout).toContain('1 of 1 record(s): 1 replayed');
    const all = await dl(['purge', '--older-than', '0s', '--yes', '--all-prefixes', ...sinkArgs()]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain('2 record(s) purged');
    // By id, a record is one record: no scope to choose.
    await seed('other:orders', order('b-2'));
    const byId = await dl(['replay', 'orders:b-2', '--handlers', FIXED, '--isolation', 'none', ...sinkArgs()]);
    expect(byId.code, byId.stdout + byId.stderr).toBe(0);
  }, 90_000);
});

/** Runs the built CLI under a pseudo-terminal; `input` is typed into it. */
function onTerminal(args: string[], input = ''): Promise<{ code: number | null; out: string }> {
  const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;
  const command = ['node', join(REPO_ROOT, 'bin', 'durable-worker.js'), 'dead-letters', ...args].map(quote).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    cwd: dir,
    env: { ...process.env, ...env(), NO_COLOR: '1', COLUMNS: '100' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

describe('dead-letters on a terminal', () => {
  it('replay draws a progress bar there (and only there); purge asks before it drops anything', async () => {
    await seed('t:c', ...Array.from({ length: 5 }, (_, i) => order(`o-${i}`)));
    const replay = await onTerminal(['replay', '--handlers', FIXED, '--isolation', 'none', ...sinkArgs()]);
    expect(replay.code, replay.out).toBe(0);
    expect(replay.out).toMatch(/\r\[#+\] 5\/5/);
    expect(replay.out).toContain('5 of 5 record(s): 5 replayed');
    const piped = await dl(['replay', '--handlers', FIXED, '--isolation', 'none', ...sinkArgs()]);
    expect(piped.stdout).not.toContain('\r');

    const declined = await onTerminal(['purge', '--state', 'replayed', ...sinkArgs()], 'n\n');
    expect(declined.out).toMatch(/purge 5 record\(s\) of file:\S+\? Their event data is dropped\. \[y\/N\]/);
    expect(declined.out).toContain('not purged');
    const accepted = await onTerminal(['purge', '--state', 'replayed', ...sinkArgs()], 'y\n');
    expect(accepted.code, accepted.out).toBe(0);
    expect(accepted.out).toContain('5 record(s) purged');
  }, 90_000);
});

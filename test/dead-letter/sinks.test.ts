import { appendFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDeadLetterStore, parseDeadLetterUrl } from '../../src/dead-letter/index.js';
import { DEAD_LETTER_ERROR_CODE } from '../../src/dead-letter/errors.js';
import { hasCode } from '../../src/errors.js';
import { freePort } from '../idempotency/private-servers.js';
import { deleteDeadLetters } from './cleanup.js';
import { deadLetter, sinkContract } from './contract.js';
import { underCi } from '../fixtures/ci.js';

const REDIS_URL = process.env.REDIS_URL;
const DATABASE_URL = process.env.DATABASE_URL;
const dir = mkdtempSync(join(tmpdir(), 'dw-dead-letter-sinks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('dead-letter sink environment', () => {
  // CI must exercise the real adapters: a missing variable fails there instead of skipping quietly.
  it.runIf(underCi())('has REDIS_URL and DATABASE_URL in CI', () => {
    expect(REDIS_URL, 'REDIS_URL must be set in CI').toBeTruthy();
    expect(DATABASE_URL, 'DATABASE_URL must be set in CI').toBeTruthy();
  });
  if (REDIS_URL === undefined) console.warn('[dead-letter] redis sink suite skipped: REDIS_URL is not set');
  if (DATABASE_URL === undefined) console.warn('[dead-letter] postgres sink suite skipped: DATABASE_URL is not set');
});

// Each test opens its own instances of one file: two instances are two writers of it.
let fileCount = 0;
const fileUrl = () => `file:${join(dir, `sink-${++fileCount}`, 'dead-letter.jsonl')}`;
describe('file sink', () => {
  let current = fileUrl();
  sinkContract('file', (prefix) => openDeadLetterStore(current, { prefix }), { counts: false, cleanup: async () => void (current = fileUrl()) });

  it('reads the lines of earlier versions (no id, prefix or state) as dead records, skips a torn last line', async () => {
    const path = join(dir, 'legacy.jsonl');
    const old = deadLetter({ eventId: 'old-1' });
    writeFileSync(path, `${JSON.stringify(old)}\n${JSON.stringify(old)}\n{"event":{"id":"torn"`);
    const sink = await openDeadLetterStore(`file:${path}`, { prefix: 'tenant:consumer' });
    try {
      expect(await sink.list({ limit: 10 })).toEqual([{ ...old, id: 'orders/created:old-1', prefix: 'tenant:consumer', state: 'dead', replayAttempts: 0 }]);
      // The torn line completed by a later append is read then.
      appendFileSync(path, `,"type":"x"},"handler":"h"}\n`);
      expect((await sink.list({ limit: 10 })).map((r) => r.id).sort()).toEqual(['h:torn', 'orders/created:old-1']);
    } finally {
      await sink.close();
    }
  });

  it('appends every change as a line (the file is never rewritten) and reads a rotated file anew', async () => {
    const path = join(dir, 'rotated.jsonl');
    const sink = await openDeadLetterStore(`file:${path}`, { prefix: 'p' });
    try {
      await sink.write(deadLetter({ eventId: 'r-1' }));
      const [record] = await sink.get('orders/created:r-1');
      await sink.update({ ...record!, state: 'replayed', updatedAt: new Date().toISOString() }, 'dead');
      const lines = readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { state: string });
      expect(lines.map((l) => l.state)).toEqual(['dead', 'replayed']);
      renameSync(path, `${path}.1`);
      await sink.write(deadLetter({ eventId: 'r-2' }));
      // The sink's own handle follows the renamed file; a new file shows only what it holds.
      writeFileSync(path, `${JSON.stringify(deadLetter({ eventId: 'r-3' }))}\n`);
      expect((await sink.list({ limit: 10 })).map((r) => r.id)).toEqual(['orders/created:r-3']);
    } finally {
      await sink.close();
    }
  });

  it('a write that cannot reach the disk rejects with DW_ERR_DEAD_LETTER', async () => {
    const blocker = join(dir, 'not-a-folder');
    writeFileSync(blocker, '');
    const sink = await openDeadLetterStore(`file:${join(blocker, 'dead.jsonl')}`, { prefix: 'p' });
    const failure = await sink.write(deadLetter()).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(hasCode(failure, DEAD_LETTER_ERROR_CODE), String(failure)).toBe(true);
    await sink.close();
  });
});

describe('sqlite sink', () => {
  // Both instances of a test are connections to one file (as the worker's processes on one host).
  const path = join(dir, 'nested', 'dead-letters.sqlite');
  sinkContract('sqlite', (prefix) => openDeadLetterStore(`sqlite:${path}`, { prefix }), { counts: true });

  it('lives beside the idempotency store in one file', async () => {
    const shared = join(dir, 'shared.sqlite');
    const { createIdempotencyStore } = await import('../../src/idempotency/index.js');
    const store = await createIdempotencyStore(`sqlite:${shared}`, { prefix: 'p', doneTtlMs: 60_000 });
    const sink = await openDeadLetterStore(`sqlite:${shared}`, { prefix: 'p' });
    try {
      await store.markDone(['orders/created:evt-1']);
      await sink.write(deadLetter({ eventId: 'evt-1' }));
      expect((await store.claim(['orders/created:evt-1'], 'w', 1_000)).states).toEqual(['done']);
      expect((await sink.get('orders/created:evt-1')).length).toBe(1);
    } finally {
      await sink.close();
      await store.close();
    }
  });
});

describe.skipIf(REDIS_URL === undefined)('redis sink', () => {
  const url = REDIS_URL as string;
  sinkContract('redis', (prefix) => openDeadLetterStore(url, { prefix }), { counts: true, cleanup: (prefixes) => deleteDeadLetters(url, prefixes) });

  it('fails to open with DW_ERR_DEAD_LETTER, without the password, when nothing listens', async () => {
    const port = await freePort();
    const failure = await openDeadLetterStore(`redis://:s3cret@127.0.0.1:${port}`, { prefix: 'p' }).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(hasCode(failure, DEAD_LETTER_ERROR_CODE)).toBe(true);
    expect(failure?.message).toContain(`127.0.0.1:${port}`);
    expect(failure?.message).not.toContain('s3cret');
  });
});

describe.skipIf(DATABASE_URL === undefined)('postgres sink', () => {
  const url = DATABASE_URL as string;
  sinkContract('postgres', (prefix) => openDeadLetterStore(url, { prefix }), { counts: true, cleanup: (prefixes) => deleteDeadLetters(url, prefixes) });

  it('fails to open with DW_ERR_DEAD_LETTER, without the password, when nothing listens', async () => {
    const port = await freePort();
    const failure = await openDeadLetterStore(`postgres://app:s3cret@127.0.0.1:${port}/app`, { prefix: 'p' }).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(hasCode(failure, DEAD_LETTER_ERROR_CODE)).toBe(true);
    expect(failure?.message).not.toContain('s3cret');
  });
});

describe('--dead-letter URLs', () => {
  it.each([
    ['file:dl.jsonl', { kind: 'file', path: '/work/dl.jsonl' }],
    ['file:///var/dl.jsonl', { kind: 'file', path: '/var/dl.jsonl' }],
    ['sqlite:state/dl.sqlite', { kind: 'sqlite', path: '/work/state/dl.sqlite' }],
    ['redis://:pw@cache:6379/2', { kind: 'redis', url: 'redis://:pw@cache:6379/2' }],
    ['rediss://cache', { kind: 'redis', url: 'rediss://cache' }],
    ['postgresql://app@db/app', { kind: 'postgres', url: 'postgresql://app@db/app' }],
    ['postgres:///app', { kind: 'postgres', url: 'postgres:///app' }],
  ])('%s', (url, expected) => {
    expect(parseDeadLetterUrl(url, '/work')).toEqual(expected);
  });

  it.each([
    ['s3://bucket', /^--dead-letter must be file:PATH, sqlite:PATH, redis:\/\/\.\.\. or postgres:\/\/\.\.\. \(got "s3:\/\/bucket"\)$/],
    ['file:', /file: needs a path/],
    ['memory', /must be file:PATH/],
    ['redis://:s3cret@', /malformed URL/],
    ['postgres://app:s3cret@:5432/app', /malformed URL|needs a host/],
  ])('refuses %s naming the option, never the password', (url, message) => {
    let error: Error | undefined;
    try {
      parseDeadLetterUrl(url, '/work');
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).toMatch(message);
    expect(error?.message).not.toContain('s3cret');
  });
});

import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ErrorCodes } from '../../src/errors.js';
import { loadHandlers, toLoadedHandler } from '../../src/handlers/loader.js';
import { requireTransactionalStore } from '../../src/idempotency/transactional-store.js';
import { defineBatchHandler, defineHandler, type TransactionClient, type TransactionQueryResult } from '../../src/index.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'transactional-handlers');

describe('transactional handlers: declaration', () => {
  it('types ctx.tx as a pg client, always there for a transactional handler and optional otherwise', () => {
    defineHandler({
      type: 'a.b',
      transactional: true,
      async handle(_event, ctx) {
        expectTypeOf(ctx.tx).toEqualTypeOf<TransactionClient>();
        expectTypeOf(ctx.tx.query<{ id: string }>('SELECT $1::text AS id', ['x'])).resolves.toEqualTypeOf<TransactionQueryResult<{ id: string }>>();
      },
    });
    defineBatchHandler({
      type: 'a.b',
      transactional: true,
      async handleBatch(_events, ctx) {
        expectTypeOf(ctx.tx).toEqualTypeOf<TransactionClient>();
      },
    });
    defineHandler({
      type: 'a.b',
      handle(_event, ctx) {
        expectTypeOf(ctx.tx).toEqualTypeOf<TransactionClient | undefined>();
      },
    });
    // A pg client fits ctx.tx as it is: the worker hands in one.
    expectTypeOf<import('pg').PoolClient>().toExtend<TransactionClient>();
  });

  it('refuses a transactional that is not a boolean, naming the field, and the loader names the file', () => {
    expect(() => defineHandler({ type: 'a.b', transactional: 'yes', handle() {} } as never)).toThrow(
      /defineHandler: `transactional` must be true or false \(got "yes"\)/,
    );
    expect(() => defineBatchHandler({ type: 'a.b', transactional: 1, handleBatch() {} } as never)).toThrow(
      /defineBatchHandler: `transactional` must be true or false \(got 1\)/,
    );
    const forged = { ...defineHandler({ type: 'a.b', handle() {} }), transactional: 'yes' };
    expect(() => toLoadedHandler('x', '/handlers/x.js', forged)).toThrow(
      expect.objectContaining({ code: ErrorCodes.HANDLER_LOAD, message: '/handlers/x.js: `transactional` must be true or false (got "yes")' }),
    );
  });

  it('carries transactional: true into the loaded handler, of either kind, and nothing for the others', async () => {
    const loaded = await loadHandlers(FIXTURES);
    expect(loaded.map((h) => [h.name, h.transactional, h.batch === undefined ? 'single' : 'batch'])).toEqual([
      ['bulk', true, 'batch'],
      ['entries/record', true, 'single'],
      ['plain', undefined, 'single'],
    ]);
    expect(toLoadedHandler('x', 'x.js', defineHandler({ type: 'a.b', transactional: false, handle() {} })).transactional).toBeUndefined();
  });
});

describe('requireTransactionalStore', () => {
  const handlers = [
    { file: '/app/handlers/entries/record.js', transactional: true as const },
    { file: '/app/handlers/plain.js' },
    { file: '/elsewhere/bulk.js', transactional: true as const },
  ];

  it('accepts a postgres:// store, or no transactional handler at all', () => {
    expect(() => requireTransactionalStore(handlers, 'postgres://app:secret@db:5432/app', '/app')).not.toThrow();
    expect(() => requireTransactionalStore(handlers, 'postgresql://db/app', '/app')).not.toThrow();
    expect(() => requireTransactionalStore([{ file: '/app/handlers/plain.js' }], 'memory', '/app')).not.toThrow();
  });

  it('refuses any other store with one ConfigError naming each transactional handler and the fix, never a password', () => {
    let thrown: unknown;
    try {
      requireTransactionalStore(handlers, 'redis://:s3cret@cache:6379', '/app');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({ code: ErrorCodes.CONFIG, option: '--idempotency' });
    const message = (thrown as Error).message;
    expect(message).toBe(
      'handlers/entries/record.js, /elsewhere/bulk.js: transactional: true needs --idempotency postgres://... (the database that holds its effects; got redis://:***@cache:6379)',
    );
    expect(() => requireTransactionalStore(handlers, 'sqlite:.durable-worker/idempotency.sqlite', '/app')).toThrow(/got sqlite:/);
  });
});

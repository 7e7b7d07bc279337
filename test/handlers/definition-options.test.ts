import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defineBatchHandler } from '../../src/handlers/define-batch.js';
import { defineHandler } from '../../src/handlers/define.js';
import { loadHandlers, toLoadedHandler } from '../../src/handlers/loader.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const handle = () => undefined;
const handleBatch = () => undefined;

/** The message `fn` throws (it must throw). */
function thrown(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('did not throw');
}

describe('defineHandler and defineBatchHandler refuse unknown keys', () => {
  it('names the key and the closest known one', () => {
    const message = thrown(() => defineHandler({ type: 'a.b', handle, trasactional: true } as never));
    expect(message).toBe('defineHandler: unknown option `trasactional`; did you mean "transactional"?');
  });

  it('says nothing close when nothing is', () => {
    expect(thrown(() => defineBatchHandler({ type: 'a.b', handleBatch, frobnicate: 1 } as never))).toBe('defineBatchHandler: unknown option `frobnicate`');
  });

  it('knows which keys belong to which kind', () => {
    expect(thrown(() => defineHandler({ type: 'a.b', handle, maxBatchSize: 5 } as never))).toMatch(/unknown option `maxBatchSize`/);
    expect(() => defineBatchHandler({ type: 'a.b', handleBatch, maxBatchSize: 5 })).not.toThrow();
  });

  it('refuses unknown keys inside limits, with their path', () => {
    expect(thrown(() => defineHandler({ type: 'a.b', handle, limits: { rate: { maxx: 4, per: '1s' } } } as never))).toBe(
      'defineHandler: unknown option `limits.rate.maxx`; did you mean "max"?',
    );
    expect(thrown(() => defineHandler({ type: 'a.b', handle, limits: { concurency: 4 } } as never))).toMatch(/`limits.concurency`; did you mean "concurrency"/);
  });

  it('the loader validates limits (zod): a window that is not a duration, a max that is not a positive integer, a perKey with nothing', () => {
    const loaded = (limits: unknown) => thrown(() => toLoadedHandler('h', '/h.js', defineHandler({ type: 'a.b', handle, limits } as never)));
    expect(loaded({ rate: { max: 4, per: 'soon' } })).toMatch(/^\/h\.js: defineHandler: `limits.rate.per`: must be a duration/);
    expect(loaded({ rate: { max: 0, per: '1s' } })).toMatch(/`limits.rate.max`/);
    expect(loaded({ rate: { per: '1s' } })).toMatch(/`limits.rate.max`: is required unless `adaptive: true`/);
    expect(loaded({ perKey: { key: (e: { subject: string }) => e.subject } })).toMatch(/`limits.perKey`: needs `rate` or `concurrency`/);
    expect(loaded({})).toMatch(/`limits`: declares nothing/);
  });

  it('resolves limits into the limiter units: per as a duration or milliseconds', () => {
    const key = (e: { subject: string }) => e.subject;
    const loaded = toLoadedHandler(
      'h',
      '/h.js',
      defineHandler({ type: 'a.b', handle, limits: { rate: { max: 40, per: '1s' }, concurrency: 4, perKey: { key, rate: { max: 2, per: 500 } } } }),
    );
    expect(loaded.limits).toEqual({ adaptive: false, rate: { max: 40, perMs: 1_000 }, concurrency: 4, perKey: { key, rate: { max: 2, perMs: 500 } } });
    const adaptive = toLoadedHandler('h', '/h.js', defineHandler({ type: 'a.b', handle, limits: { adaptive: true } }));
    expect(adaptive.limits).toEqual({ adaptive: true, rate: { max: undefined, perMs: 1_000 } });
  });

  it('fails the load with one line naming the file and the key', async () => {
    const dir = join(FIXTURES, 'handlers-unknown-key');
    const err = await loadHandlers(dir).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string; file: string },
    );
    expect(err?.code).toBe('DW_ERR_HANDLER_LOAD');
    expect(err?.file).toBe(join(dir, 'typo.mjs'));
    expect(err?.message).toBe(`${join(dir, 'typo.mjs')}: defineHandler: unknown option \`trasactional\`; did you mean "transactional"?`);
    expect(err?.message).not.toContain('\n');
  });
});

import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadHandlerSet } from '../../src/handlers/handler-set.js';
import { loadHandlers } from '../../src/handlers/loader.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const fixture = (name: string) => join(FIXTURES, name);

async function loadError(dir: string): Promise<{ code?: string; message: string; file?: string }> {
  try {
    await loadHandlers(dir);
  } catch (err) {
    return err as { code?: string; message: string; file?: string };
  }
  throw new Error(`loading ${dir} did not fail`);
}

describe('loadHandlers', () => {
  it('loads .ts and .mjs handlers recursively, names them by relative path, skips _, tests and .d.ts', async () => {
    const handlers = await loadHandlers(fixture('handlers-behaviours'));
    expect(handlers.map((h) => h.name)).toEqual(['behave', 'nested/second', 'short-timeout']);
    const byName = Object.fromEntries(handlers.map((h) => [h.name, h]));
    expect(byName.behave?.types).toEqual(['behave.*']);
    expect(byName['nested/second']?.types).toEqual(['behave.multi', 'other.type']);
    expect(byName['short-timeout']?.timeoutMs).toBe(300);
    expect(byName.behave?.file).toBe(join(fixture('handlers-behaviours'), 'behave.ts'));
    expect(typeof byName.behave?.handle).toBe('function');
  });

  it('names the file and the syntax error', async () => {
    const err = await loadError(fixture('handlers-syntax-error'));
    expect(err.code).toBe('DW_ERR_HANDLER_LOAD');
    expect(err.message).toContain('broken.js');
    // Node says SyntaxError; under vitest the import goes through vite, which words it differently.
    expect(err.message).toMatch(/SyntaxError|invalid JS syntax/);
    expect(err.file).toBe(join(fixture('handlers-syntax-error'), 'broken.js'));
  });

  it('refuses a module without a default export', async () => {
    const err = await loadError(fixture('handlers-no-default'));
    expect(err.code).toBe('DW_ERR_HANDLER_LOAD');
    expect(err.message).toMatch(/named-only\.mjs: no default export/);
  });

  it('refuses a default export not made with defineHandler', async () => {
    const err = await loadError(fixture('handlers-not-handler'));
    expect(err.message).toMatch(/plain-object\.mjs: the default export is not a handler made with defineHandler/);
  });

  it('refuses a bad type pattern, quoting it', async () => {
    const err = await loadError(fixture('handlers-bad-pattern'));
    expect(err.message).toContain('bad.mjs: bad type pattern "source_entry.*.updated"');
  });

  it('says when the folder is missing or holds no handler', async () => {
    const missing = await loadError(fixture('handlers-does-not-exist'));
    expect(missing.code).toBe('DW_ERR_HANDLER_LOAD');
    expect(missing.message).toMatch(/handlers-does-not-exist does not exist \(--handlers\)/);
    const empty = await loadError(fixture('handlers-empty'));
    expect(empty.message).toMatch(/holds no handler module/);
  });
});

describe('loadHandlerSet', () => {
  it('adds the forwarding handler as @forward, alone when the folder is missing', async () => {
    const alone = await loadHandlerSet({ handlersDir: fixture('handlers-does-not-exist'), forward: { url: 'http://127.0.0.1:9/events', mode: 'binary' } });
    expect(alone.map((h) => [h.name, h.types])).toEqual([['@forward', ['*']]]);
    const both = await loadHandlerSet({ handlersDir: fixture('handlers-behaviours'), forward: { url: 'http://127.0.0.1:9/events', mode: 'structured' } });
    expect(both.map((h) => h.name)).toEqual(['behave', 'nested/second', 'short-timeout', '@forward']);
  });

  it('still fails on a broken module when forwarding', async () => {
    await expect(
      loadHandlerSet({ handlersDir: fixture('handlers-syntax-error'), forward: { url: 'http://127.0.0.1:9/', mode: 'binary' } }),
    ).rejects.toMatchObject({
      code: 'DW_ERR_HANDLER_LOAD',
    });
  });
});

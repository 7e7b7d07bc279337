/**
 * A handlers folder mounted by the kubelet (ConfigMap, Secret, projected volume) is a set of
 * symbolic links into a hidden, timestamped folder (test/fixtures/kubelet-volume.ts): the loader
 * follows them, keeps skipping what it always skips, and picks up an update after the swap.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadHandlers } from '../../src/handlers/loader.js';
import { writeAtomicWriterVolume } from '../fixtures/kubelet-volume.js';
import { tempDir } from '../worker/harness.js';

/** A handler module that needs no package to resolve (the brand defineHandler sets). */
function handlerModule(type: string): string {
  return `export default { [Symbol.for('durable-worker.handler')]: true, type: ${JSON.stringify(type)}, async handle() {} };\n`;
}

describe('a handlers folder as the kubelet mounts it', () => {
  it('loads the ConfigMap layout: KEY -> ..data/KEY, ..data -> ..<timestamp>/', async () => {
    const dir = tempDir('kubelet-configmap');
    writeAtomicWriterVolume(dir, {
      'log-event.mjs': handlerModule('*'),
      'orders.js': handlerModule('order.*'),
      '_helpers.mjs': 'export const x = 1;\n',
      'orders.test.mjs': 'throw new Error("a test is not a handler");\n',
      'README.md': '# handlers\n',
    });
    const handlers = await loadHandlers(dir);
    expect(handlers.map((h) => [h.name, h.types])).toEqual([
      ['log-event', ['*']],
      ['orders', ['order.*']],
    ]);
    // Named by the link the user wrote, not by the hidden folder the kubelet keeps it in.
    expect(handlers[0]!.file).toBe(join(dir, 'log-event.mjs'));
  });

  it('loads a projected volume with nested paths (nested -> ..data/nested)', async () => {
    const dir = tempDir('kubelet-projected');
    writeAtomicWriterVolume(dir, { 'top.mjs': handlerModule('a.top'), 'billing/invoice.mjs': handlerModule('billing.invoice'), 'billing/_shared.mjs': '' });
    expect((await loadHandlers(dir)).map((h) => h.name)).toEqual(['billing/invoice', 'top']);
  });

  it('after an update (..data swapped to a new folder, the old one removed) a new load lists the new files', async () => {
    const dir = tempDir('kubelet-update');
    writeAtomicWriterVolume(dir, { 'h.mjs': handlerModule('v1.event') });
    expect((await loadHandlers(dir)).map((h) => h.types)).toEqual([['v1.event']]);
    writeAtomicWriterVolume(dir, { 'h.mjs': handlerModule('v2.event'), 'added.mjs': handlerModule('added.event') });
    expect((await loadHandlers(dir)).map((h) => h.name)).toEqual(['added', 'h']);
  });

  it('follows a link out of the folder, lists a folder reached twice once, and names a dangling link', async () => {
    const dir = tempDir('links');
    const elsewhere = tempDir('links-target');
    writeFileSync(join(elsewhere, 'shared.mjs'), handlerModule('shared.event'));
    symlinkSync(join(elsewhere, 'shared.mjs'), join(dir, 'shared.mjs'));
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'inner.mjs'), handlerModule('inner.event'));
    symlinkSync('..', join(dir, 'sub', 'loop'));
    expect((await loadHandlers(dir)).map((h) => h.name)).toEqual(['shared', 'sub/inner']);

    symlinkSync(join(elsewhere, 'missing.mjs'), join(dir, 'gone.mjs'));
    await expect(loadHandlers(dir)).rejects.toMatchObject({
      code: 'DW_ERR_HANDLER_LOAD',
      message: expect.stringMatching(/gone\.mjs: a symbolic link to a file that does not exist/),
    });
  });
});

import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeDirectory, makeDirectorySync } from '../../src/fs/make-directory.js';

const root = mkdtempSync(join(tmpdir(), 'dw-make-directory-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.each([
  ['makeDirectorySync', async (dir: string) => makeDirectorySync(dir)],
  ['makeDirectory', makeDirectory],
])('%s', (name, make) => {
  it('makes every missing ancestor, and leaves an existing directory alone', async () => {
    const dir = join(root, name, 'a', 'b', 'c');
    await make(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
    await make(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
  });

  it('fails with the system error where mkdir answers ENOENT under an existing parent (Node spins forever there with recursive: true)', async () => {
    // /proc exists on every Linux host (CI included); mkdir below it answers ENOENT.
    expect(existsSync('/proc/self')).toBe(true);
    await expect(make(`/proc/durable-worker-${name}/x`)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('fails with the system error where a file is in the way', async () => {
    const file = join(root, `${name}-file`);
    writeFileSync(file, '');
    await expect(make(join(file, 'below'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });
});

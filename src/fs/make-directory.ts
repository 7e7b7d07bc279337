import { mkdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

/*
 * `mkdir -p` without Node's `recursive` flag. On Node 20, `mkdir(dir, { recursive: true })` spins
 * forever at 100 % CPU when mkdir answers ENOENT although the parent exists (any path under /proc,
 * for one): the sync form then blocks the event loop, so even SIGTERM goes unheard, and the async
 * form never settles. Here the missing ancestors are made one by one, and a directory that cannot
 * be made fails with the system's error.
 */

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException).code;

export function makeDirectorySync(dir: string): void {
  try {
    mkdirSync(dir);
  } catch (err) {
    if (codeOf(err) === 'EEXIST') return;
    const parent = dirname(dir);
    if (codeOf(err) !== 'ENOENT' || parent === dir) throw err;
    makeDirectorySync(parent);
    try {
      mkdirSync(dir);
    } catch (again) {
      // Made meanwhile by someone else is fine; ENOENT with the parent in place is the real answer.
      if (codeOf(again) !== 'EEXIST') throw again;
    }
  }
}

export async function makeDirectory(dir: string): Promise<void> {
  try {
    await mkdir(dir);
  } catch (err) {
    if (codeOf(err) === 'EEXIST') return;
    const parent = dirname(dir);
    if (codeOf(err) !== 'ENOENT' || parent === dir) throw err;
    await makeDirectory(parent);
    try {
      await mkdir(dir);
    } catch (again) {
      if (codeOf(again) !== 'EEXIST') throw again;
    }
  }
}

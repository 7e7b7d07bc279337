import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../cli/cli-process.js';

/**
 * The run path stays readable in one sitting per file: no file of src/worker or src/dispatch is over
 * 300 lines (docs/contributing.md). A file that grows past it is split along a concept of its own.
 */
const LIMIT = 300;

describe('the run path in files a reader can hold', () => {
  for (const folder of ['src/worker', 'src/dispatch']) {
    it(`${folder}: no file over ${LIMIT} lines`, () => {
      const over = readdirSync(join(REPO_ROOT, folder))
        .filter((name) => /\.(ts|mjs|js)$/.test(name))
        .map((name) => ({ file: `${folder}/${name}`, lines: readFileSync(join(REPO_ROOT, folder, name), 'utf8').split('\n').length - 1 }))
        .filter(({ lines }) => lines > LIMIT);
      expect(over).toEqual([]);
    });
  }
});

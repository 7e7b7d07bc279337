/**
 * docs/errors.md stays the page of every error code: each code of ErrorCodes has its section and its
 * row in the table (with the class that carries it, exported from the package entry), every code the
 * source spells is in ErrorCodes, and the page names no code that does not exist.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as entry from '../../src/index.js';
import { ErrorCodes } from '../../src/errors.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const page = readFileSync(join(ROOT, 'docs/errors.md'), 'utf8');
const codes = Object.values(ErrorCodes) as string[];

function* sourceFiles(dir: string): Generator<[string, string]> {
  for (const file of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (/\.(c|m)?(t|j)s$/.test(file)) yield [file, readFileSync(join(dir, file), 'utf8')];
  }
}

describe('docs/errors.md', () => {
  it('has a section for every code, and names no code that does not exist', () => {
    const sections = [...page.matchAll(/^### (DW_ERR_[A-Z_]+)$/gm)].map((m) => m[1]);
    expect([...sections].sort()).toEqual([...codes].sort());
    const named = new Set([...page.matchAll(/DW_ERR_[A-Z_]+/g)].map((m) => m[0]));
    for (const code of named) expect(codes, `${code} is named on the page`).toContain(code);
  });

  it('gives each code its row, and each class the row names is exported by the package entry with that code', () => {
    for (const code of codes) {
      const row = page.match(new RegExp(`^\\| \`${code}\` \\| (.+?) \\| (.+?) \\|$`, 'm'));
      expect(row, `${code} has a row in the table`).not.toBeNull();
      const classes = [...(row?.[1] ?? '').matchAll(/`(\w+)`/g)].map((m) => m[1] as string);
      for (const name of classes) {
        const Class = (entry as Record<string, unknown>)[name];
        expect(typeof Class, `${name} is exported by durable-worker`).toBe('function');
      }
    }
  });

  it('every DW_ERR_ code the source spells is one of ErrorCodes (one list of codes)', () => {
    for (const [file, text] of sourceFiles(join(ROOT, 'src'))) {
      for (const m of text.matchAll(/DW_ERR_[A-Z_]+/g)) expect(codes, `${m[0]} in ${file}`).toContain(m[0]);
    }
  });
});

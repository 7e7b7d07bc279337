/**
 * The import structure of src/ that docs/contributing.md describes: no import circle between files,
 * no cycle between folders, no arrow from a lower layer up (scripts/check-imports.mjs, also
 * `npm run check:imports`). The reader and the graph are tested on small inputs first, so that a
 * clean report means "nothing found", not "nothing read".
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ALLOWED_UPWARD, LAYERS, buildGraph, check, circles, readImports, unitOf } from '../../scripts/check-imports.mjs';
import { ROOT } from './doc-commands.js';

describe('the import reader', () => {
  it('finds every form of import and export with a module path, and its kind', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from './b.js';",
      "import { type C, type D } from './c.js';",
      "import e, { type E } from './e.js';",
      "import * as f from './f.js';",
      "import './g.js';",
      "export { h } from './h.js';",
      "export type { I } from './i.js';",
      "export * from './j.js';",
      'import {',
      '  k,',
      '  type K,',
      "} from './k.js';",
      "const l = await import('./l.js');",
      "type M = typeof import('./m.js');",
      "import { type as n } from './n.js';",
    ].join('\n');
    expect(readImports(text)).toEqual([
      { specifier: './a.js', kind: 'value' },
      { specifier: './b.js', kind: 'type' },
      { specifier: './c.js', kind: 'type' },
      { specifier: './e.js', kind: 'value' },
      { specifier: './f.js', kind: 'value' },
      { specifier: './g.js', kind: 'value' },
      { specifier: './h.js', kind: 'value' },
      { specifier: './i.js', kind: 'type' },
      { specifier: './j.js', kind: 'value' },
      { specifier: './k.js', kind: 'value' },
      { specifier: './l.js', kind: 'dynamic' },
      { specifier: './m.js', kind: 'dynamic' },
      { specifier: './n.js', kind: 'value' },
    ]);
  });

  it('reads no import in comments, strings, templates, regular expressions or declarations', () => {
    const text = [
      "// import { a } from './a.js';",
      "/* import('./b.js') */",
      "/** ```ts\n * import { c } from './c.js';\n * ``` */",
      'const d = "import { d } from \'./d.js\'";',
      "const e = `import { e } from './e.js';\\nimport('./e2.js')`;",
      "const f = /import\\('\\.\\/f.js'\\)/;",
      'export interface G { from: string }',
      "export const h = 'from';",
      "const url = new URL('./i.js', import.meta.url);",
      'client.import(source);',
      "const j = `${await import('./j.js')}`;",
    ].join('\n');
    expect(readImports(text)).toEqual([{ specifier: './j.js', kind: 'dynamic' }]);
  });

  it("reads a JavaScript file's JSDoc type imports, as TypeScript does", () => {
    const text = "/** @typedef {import('./store.js').Store} Store */\n// {import('./not.js')}";
    expect(readImports(text, { javascript: true })).toEqual([{ specifier: './store.js', kind: 'type' }]);
    expect(readImports(text)).toEqual([]);
  });
});

describe('the graph', () => {
  it('names a file by its folder under src/, or by itself at the top', () => {
    expect(unitOf('src/worker/start.ts')).toBe('worker');
    expect(unitOf('src/emulator/auth/jwt.ts')).toBe('emulator');
    expect(unitOf('src/errors.ts')).toBe('errors');
  });

  it('finds circles of any length and self-imports, and nothing in a tree', () => {
    expect(
      circles(
        ['a', 'b', 'c', 'd'],
        [
          ['a', 'b'],
          ['b', 'c'],
          ['c', 'a'],
          ['c', 'd'],
        ],
      ),
    ).toEqual([['a', 'b', 'c']]);
    expect(circles(['a'], [['a', 'a']])).toEqual([['a']]);
    expect(
      circles(
        ['a', 'b', 'c'],
        [
          ['a', 'b'],
          ['a', 'c'],
          ['b', 'c'],
        ],
      ),
    ).toEqual([]);
  });

  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  /** A repository of its own with these files under src/. */
  function repo(files: Record<string, string>): string {
    const root = mkdtempSync(join(tmpdir(), 'dw-imports-'));
    dirs.push(root);
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, 'src', path)), { recursive: true });
      writeFileSync(join(root, 'src', path), text);
    }
    return root;
  }

  it('reports a file circle, a folder cycle, an arrow up, an unplaced folder and an import of nothing', () => {
    const root = repo({
      'low/a.ts': "import type { B } from './b.js';\nexport const a = 1;",
      'low/b.ts': "import { a } from './a.js';\nimport { h } from '../high/h.js';\nexport type B = typeof a | typeof h;",
      'high/h.ts': "import { a } from '../low/a.js';\nexport const h = a;",
      'odd/o.ts': "import './missing.js';",
    });
    const { problems } = check({ root, layers: [['low'], ['high']], allowedUpward: [] });
    expect(problems.map((p) => p.kind).sort()).toEqual(['file circle', 'folder cycle', 'unplaced', 'unresolved', 'upward']);
    expect(problems.find((p) => p.kind === 'upward')?.text).toContain('src/low/b.ts → src/high/h.ts');
    expect(problems.find((p) => p.kind === 'file circle')?.text).toContain('src/low/a.ts → src/low/b.ts (type)');
  });

  it('lets an allowed upward import through, and reports the allowance once it is gone', () => {
    const root = repo({
      'low/a.ts': "export async function a() { return (await import('../high/h.js')).h; }",
      'low/base.ts': 'export const base = 1;',
      'high/h.ts': "import { base } from '../low/base.js';\nexport const h = base;",
    });
    const allowance = { from: 'src/low/a.ts', to: 'src/high/h.ts', reason: 'a lazy entry point' };
    expect(check({ root, layers: [['low'], ['high']], allowedUpward: [allowance] }).problems).toEqual([]);
    const stale = { from: 'src/low/a.ts', to: 'src/high/gone.ts', reason: 'moved' };
    expect(check({ root, layers: [['low'], ['high']], allowedUpward: [allowance, stale] }).problems.map((p) => p.kind)).toEqual(['stale allowance']);
  });
});

describe('docs/contributing.md', () => {
  const guide = readFileSync(join(ROOT, 'docs', 'contributing.md'), 'utf8');

  it('describes every folder and top-level file of src/ in its layout table', () => {
    const units = [...new Set(buildGraph(ROOT).files.map(unitOf))];
    const rows = new Set([...guide.matchAll(/^\| `src\/([\w-]+?)(?:\.c?ts)?` \|/gm)].map((m) => m[1]!));
    expect(units.filter((u) => !rows.has(u))).toEqual([]);
  });

  it('lists the layers of scripts/check-imports.mjs, in its order', () => {
    const section = guide.slice(guide.indexOf('### Layers'));
    const listed = [...section.matchAll(/^\d+\. (.+)$/gm)].map((m) => [...m[1]!.matchAll(/`([\w-]+?)(?:\.c?ts)?`/g)].map((n) => n[1]!));
    expect(listed).toEqual(LAYERS);
  });
});

describe('src/ today', () => {
  it('every folder and top-level file of src/ has a layer, and every allowance a reason', () => {
    const placed = new Set(LAYERS.flat());
    const units = [...new Set(buildGraph(ROOT).files.map(unitOf))];
    expect(units.filter((u) => !placed.has(u))).toEqual([]);
    expect(units.length).toBeGreaterThan(10);
    for (const allowance of ALLOWED_UPWARD) expect(allowance.reason.length).toBeGreaterThan(20);
  });

  it('`npm run check:imports` finds no circle, no folder cycle and no arrow up', () => {
    const run = spawnSync(process.execPath, [join(ROOT, 'scripts', 'check-imports.mjs')], { cwd: ROOT, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^check-imports: ok: \d+ files, \d+ imports between files/);
  });
});

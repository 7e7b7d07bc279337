/**
 * docs/api.md lists what each entry of the package exports: the entries' runtime values and their
 * declared names (values and types, read from the entry's export statements) must be those lists,
 * and every entry must be one of package.json's `exports`.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const page = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');

const ENTRIES: Record<string, string> = {
  'durable-worker': 'src/index.ts',
  'durable-worker/worker': 'src/entries/worker.ts',
  'durable-worker/client': 'src/entries/client.ts',
  'durable-worker/emulator': 'src/entries/emulator.ts',
  'durable-worker/testing': 'src/testing/index.ts',
};

/** The page's lists for `entry`: the backticked names after "Values:", and after "Types:" and "Aliases:" (types), in its section. */
function listed(entry: string): { values: string[]; types: string[] } {
  const from = page.indexOf(`## \`${entry}\`\n`);
  const section = page.slice(from, page.indexOf('\n## ', from + 1) === -1 ? undefined : page.indexOf('\n## ', from + 1));
  const list = (label: string) =>
    [...(section.match(new RegExp(`^${label}: ([\\s\\S]+?)\\.$`, 'm'))?.[1] ?? '').matchAll(/`(\w+)`/g)].map((m) => m[1] as string).sort();
  return { values: list('Values'), types: [...list('Types'), ...list('Aliases')].sort() };
}

/** The names an entry declares with `export { ... }` and `export type { ... }` (not `export *`). */
function declared(file: string): { values: string[]; types: string[] } {
  const text = readFileSync(join(ROOT, file), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
  const values: string[] = [];
  const types: string[] = [];
  for (const m of text.matchAll(/export\s+(type\s+)?\{([^}]*)\}/g)) {
    for (const part of (m[2] as string)
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)) {
      const name = part
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .pop()!
        .trim();
      (m[1] !== undefined || part.startsWith('type ') ? types : values).push(name);
    }
  }
  return { values: values.sort(), types: types.sort() };
}

describe('docs/api.md', () => {
  const exportsField = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports;

  for (const [entry, file] of Object.entries(ENTRIES)) {
    it(`${entry}: its declared exports are the page's lists, and package.json exports it`, () => {
      expect(exportsField).toHaveProperty([entry === 'durable-worker' ? '.' : `./${entry.slice('durable-worker/'.length)}`]);
      expect(declared(file)).toEqual(listed(entry));
    });
  }

  it("the rooms' runtime values are their lists; the package entry has its own and, as aliases, every room's", async () => {
    const rooms = ['durable-worker/worker', 'durable-worker/client', 'durable-worker/emulator', 'durable-worker/testing'];
    for (const entry of rooms) {
      const module = (await import(join(ROOT, ENTRIES[entry] as string))) as Record<string, unknown>;
      expect(Object.keys(module).sort(), entry).toEqual(listed(entry).values);
    }
    const root = (await import(join(ROOT, 'src/index.ts'))) as Record<string, unknown>;
    const aliases = rooms.slice(0, 3).flatMap((entry) => listed(entry).values);
    expect(Object.keys(root).sort()).toEqual([...new Set([...listed('durable-worker').values, ...aliases])].sort());
  });
});

/**
 * Comments cite docs by section (`docs/architecture.md, "Deferred runs"`): every such citation in
 * src/, test/, bench/ and scripts/ names a page that exists and a heading of it that starts with the
 * cited words, so a renamed section cannot leave comments pointing nowhere.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function citations(): { file: string; page: string; section: string }[] {
  const found: { file: string; page: string; section: string }[] = [];
  for (const dir of ['src', 'test', 'bench', 'scripts']) {
    for (const file of readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })) {
      if (!/\.(c|m)?(t|j)s$/.test(file) || file.includes('node_modules')) continue;
      for (const line of readFileSync(join(ROOT, dir, file), 'utf8').split('\n')) {
        // Comment lines only: a test may hold a citation as data in a string.
        if (!/^\s*(\*|\/\/|\/\*)/.test(line)) continue;
        for (const m of line.matchAll(/(docs\/[\w./-]+\.md), "([^"]+)"/g))
          found.push({ file: `${dir}/${file}`, page: m[1] as string, section: m[2] as string });
      }
    }
  }
  return found;
}

describe('section citations in comments', () => {
  const cited = citations();

  it('finds the citations (the pattern still matches how comments cite)', () => {
    expect(cited.length).toBeGreaterThan(10);
  });

  it('each names an existing page and a heading of it that starts with the cited words', () => {
    const headings = new Map<string, string[]>();
    const wrong: string[] = [];
    for (const { file, page, section } of cited) {
      if (!existsSync(join(ROOT, page))) {
        wrong.push(`${file} cites ${page}: no such page`);
        continue;
      }
      if (!headings.has(page))
        headings.set(
          page,
          [...readFileSync(join(ROOT, page), 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map((m) => (m[1] as string).trim()),
        );
      if (!(headings.get(page) ?? []).some((heading) => heading.startsWith(section))) wrong.push(`${file} cites ${page}, "${section}": no such heading`);
    }
    expect(wrong).toEqual([]);
  });
});

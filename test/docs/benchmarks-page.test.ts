/**
 * docs/benchmarks.md is a user page: short, without lab history, and every link into it lands on a
 * heading. Source comments cite it by anchor (`docs/benchmarks.md#memory`), not by a paragraph's
 * wording, so that a rewrite of the page shows here instead of leaving comments pointing nowhere.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEVELOPER_EXAMPLES, ROOT } from './doc-commands.js';

const PAGE = 'docs/benchmarks.md';
const MAX_LINES = 300;

/** GitHub's anchor for a heading: lowercase, punctuation but '-' and '_' dropped, each space a '-'. */
function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a Markdown text defines through its headings, repeated ones suffixed -1, -2 as GitHub does. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (heading === null) continue;
    const base = githubAnchor(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The `#anchor` of every link to benchmarks.md in a text (`benchmarks.md#x`, `docs/benchmarks.md#x`, `../../docs/benchmarks.md#x`). */
function anchorsLinkedIn(text: string): string[] {
  return [...text.matchAll(/benchmarks\.md#([^\s)"'`,;]+)/g)].map((m) => m[1]!);
}

function filesUnder(dir: string, pattern: RegExp): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((path) => pattern.test(path))
    .map((path) => join(dir, path));
}

const page = readFileSync(join(ROOT, PAGE), 'utf8');
const anchors = headingAnchors(page);

describe('docs/benchmarks.md', () => {
  it(`has at most ${MAX_LINES} lines`, () => {
    expect(page.trimEnd().split('\n').length).toBeLessThanOrEqual(MAX_LINES);
  });

  it('carries no commit hashes, UTC timestamps or issue numbers (git history keeps the lab journal)', () => {
    const found: string[] = [];
    page.split('\n').forEach((line, i) => {
      for (const pattern of [/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b/, /\b\d{1,2}:\d{2}(?:[–-]\d{1,2}:\d{2})?\s*UTC\b/, /\bissues?\s*#?\d+/i]) {
        const match = pattern.exec(line);
        if (match !== null) found.push(`${PAGE}:${i + 1}: ${match[0]}`);
      }
    });
    expect(found).toEqual([]);
  });

  it('links within itself only to its own headings', () => {
    const missing = [...page.matchAll(/\]\(#([^)\s]+)\)/g)].map((m) => m[1]!).filter((anchor) => !anchors.has(anchor));
    expect(missing).toEqual([]);
  });
});

describe('links into docs/benchmarks.md', () => {
  const docs = [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md') && `docs/${f}` !== PAGE)
      .map((f) => `docs/${f}`),
    ...DEVELOPER_EXAMPLES.map((d) => `examples/${d}/README.md`).filter((f) => existsSync(join(ROOT, f))),
  ];

  it.each(docs)('%s names only headings that exist', (file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const missing = anchorsLinkedIn(text).filter((anchor) => !anchors.has(anchor));
    expect(missing, `${file} links to ${PAGE}#${missing.join(', #')}; headings: #${[...anchors].join(', #')}`).toEqual([]);
  });

  it('source comments cite it by an anchor that exists, never by a paragraph', () => {
    const offending: string[] = [];
    for (const file of filesUnder('src', /\.(?:ts|mts|mjs|js)$/)) {
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (!line.includes('benchmarks.md')) return;
          const where = `${relative(ROOT, join(ROOT, file))}:${i + 1}`;
          const linked = anchorsLinkedIn(line);
          const bare = line.split('benchmarks.md').length - 1 - linked.length;
          if (bare > 0) offending.push(`${where}: cites ${PAGE} without an #anchor: ${line.trim()}`);
          for (const anchor of linked.filter((a) => !anchors.has(a))) offending.push(`${where}: #${anchor} is no heading of ${PAGE}: ${line.trim()}`);
        });
    }
    expect(offending, `headings of ${PAGE}: #${[...anchors].join(', #')}`).toEqual([]);
  });
});

describe('the anchor rules', () => {
  it("follow GitHub's: lowercase, punctuation dropped, spaces to '-', repeats numbered", () => {
    expect(githubAnchor('Worker: `bench/worker`')).toBe('worker-benchworker');
    expect(githubAnchor('Isolation none, SQLite store')).toBe('isolation-none-sqlite-store');
    expect(githubAnchor('What was tried and why it is not in')).toBe('what-was-tried-and-why-it-is-not-in');
    expect([...headingAnchors('# A\n## Notes\n```\n# not a heading\n```\n## Notes\n')]).toEqual(['a', 'notes', 'notes-1']);
  });

  it('find the anchors a line links to, and none where it only names the page', () => {
    expect(anchorsLinkedIn('see (docs/benchmarks.md#memory) and [x](../../docs/benchmarks.md#tracing).')).toEqual(['memory', 'tracing']);
    expect(anchorsLinkedIn(' * (docs/benchmarks.md, "Chains spread over the threads").')).toEqual([]);
  });
});

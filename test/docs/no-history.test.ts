/**
 * docs/ is for users and a comment says why, citing only files a clone of the repository has: no commit
 * hashes, no issue numbers, no tags pointing into documents that live outside it. What counts as each mark,
 * and what is left alone on purpose (colours, UUIDs, trace IDs, digests), is in ./history-marks.ts.
 *
 * README.md and every Markdown file under docs/ are read whole (prose, tables and code blocks alike); in
 * src/ only the comments of TypeScript and JavaScript files (.ts, .cts, .mts, .js, .cjs, .mjs) are read,
 * never code or strings. One test per docs file and per src/ folder, so a failure names the place, and
 * its list gives `file:line: kind "text"` for every mark.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './doc-commands.js';
import { commentLines, marksIn } from './history-marks.js';

function filesUnder(dir: string, pattern: RegExp): string[] {
  const abs = join(ROOT, dir);
  if (statSync(abs).isFile()) return pattern.test(dir) ? [dir] : [];
  return readdirSync(abs, { recursive: true, encoding: 'utf8' })
    .filter((path) => pattern.test(path))
    .map((path) => `${dir}/${path.split('\\').join('/')}`)
    .sort();
}

function marksOfLines(file: string, lines: Iterable<{ line: number; text: string }>): string[] {
  const found: string[] = [];
  for (const { line, text } of lines) {
    for (const mark of marksIn(text)) found.push(`${file}:${line}: ${mark.kind} ${JSON.stringify(mark.text)}`);
  }
  return found;
}

function docMarks(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return marksOfLines(
    file,
    text.split('\n').map((line, i) => ({ line: i + 1, text: line })),
  );
}

function commentMarks(file: string): string[] {
  return marksOfLines(file, commentLines(readFileSync(join(ROOT, file), 'utf8'), file));
}

const SOURCE = /\.(?:[cm]?ts|[cm]?js)$/;
/** Every Markdown file under docs/, and README.md, the first page a user reads. */
const DOC_FILES = ['README.md', ...filesUnder('docs', /\.md$/)];
/** src/'s folders, and its top-level files together under `src`. */
const SOURCE_AREAS = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => `src/${entry.name}`)
  .sort();

describe('docs/ and README.md carry no history and cite nothing outside the repository', () => {
  it('finds the Markdown files', () => {
    expect(DOC_FILES).toContain('docs/platform-api.md');
  });

  it.each(DOC_FILES)('%s', (file) => {
    expect(docMarks(file)).toEqual([]);
  });
});

describe('src/ comments carry no history and cite nothing outside the repository', () => {
  it.each(SOURCE_AREAS)('%s', (dir) => {
    expect(filesUnder(dir, SOURCE).flatMap(commentMarks)).toEqual([]);
  });

  it('src (its top-level files)', () => {
    const files = readdirSync(join(ROOT, 'src')).filter((name) => SOURCE.test(name) && statSync(join(ROOT, 'src', name)).isFile());
    expect(files.length).toBeGreaterThan(0);
    expect(files.flatMap((name) => commentMarks(`src/${name}`))).toEqual([]);
  });
});

describe('the marks', () => {
  const kinds = (line: string) => marksIn(line).map((mark) => `${mark.kind} ${mark.text}`);

  it('finds commit hashes, abbreviated or in full', () => {
    expect(kinds('On main this was 293a846, for the old loop.')).toEqual(['commit hash 293a846']);
    expect(kinds('(read from the code at bd3caac)')).toEqual(['commit hash bd3caac']);
    expect(kinds('commit 0123456789abcdef0123456789abcdef01234567')).toEqual(['commit hash 0123456789abcdef0123456789abcdef01234567']);
    expect(kinds('between a1b2c3d..e4f5a6b7c8')).toEqual(['commit hash a1b2c3d', 'commit hash e4f5a6b7c8']);
    expect(kinds('https://github.com/o/r/commit/3628c3e')).toEqual(['commit hash 3628c3e']);
  });

  it('leaves alone what only looks like a hash', () => {
    for (const line of [
      'colour #a1b2c3 and #a1b2c3d4',
      'a hex literal 0x7fffffff1',
      'eventId 1eb8549c-88d3-43d8-a095-3fe279e22444',
      'traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      'span 00f067aa0ba902b7, trace 4bf92f3577b34da6a3ce929d0e0e4736',
      'leaseId cf2eeb682e22-1',
      'link->4bf92f35…/00f067aa0ba902b7',
      'sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      'sha1: 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12',
      'words: deadbeef, decade, facade, 1234567, e2e',
      'an identifier a1b2c3d4e5_x or x_a1b2c3d4e5',
    ]) {
      expect(kinds(line), line).toEqual([]);
    }
  });

  it('finds issue references, and leaves alone headings, entities and fragments', () => {
    expect(kinds('the naive worker of issue 3')).toEqual(['issue reference issue 3']);
    expect(kinds('Issues 3 and 4, done-when')).toEqual(['issue reference Issues 3']);
    expect(kinds('see issue #42')).toEqual(['issue reference issue #42']);
    expect(kinds('fixed in #12, and (#7)')).toEqual(['issue reference #12', 'issue reference #7']);
    for (const line of ['# 1. Heading', "'hash#1'", '&#123;', 'page.md#section-2', 'color: #333;', 'an issue with the lease']) {
      expect(kinds(line), line).toEqual([]);
    }
  });

  it('finds citations of documents outside the repository', () => {
    expect(kinds('Two-phase shutdown (STYLE 9)')).toEqual(['outside citation STYLE 9']);
    expect(kinds('(STYLE 4/8)')).toEqual(['outside citation STYLE 4/8']);
    expect(kinds('see STYLE.md')).toEqual(['outside citation STYLE.md']);
    expect(kinds('Exit codes of CONTRACT.md')).toEqual(['outside citation CONTRACT']);
    expect(kinds('(TOOLCHAIN: --import tsx/esm)')).toEqual(['outside citation TOOLCHAIN']);
    expect(kinds('the copy in ../shared/spec/')).toEqual(['outside citation ../shared']);
    expect(kinds('the contract of the store, its style, the toolchain, docs/platform-api.md')).toEqual([]);
  });
});

describe('the comments of a source file', () => {
  const comments = (source: string) => commentLines(source, 'x.ts').map((c) => `${c.line}: ${c.text.trim()}`);

  it('are every // and /* */ comment, line by line', () => {
    const source = ['/**', ' * JSDoc', ' */', 'const a = 1; // trailing', 'f(/* inline */ a);', ''].join('\n');
    expect(comments(source)).toEqual(['1: /**', '2: * JSDoc', '3: */', '4: // trailing', '5: /* inline */']);
  });

  it('are never a string, a template or a regular expression that looks like one', () => {
    const source = [
      "const url = 'https://example.com/issue 1'; // one",
      'const re = /\\/\\/ issue 2/g; // two',
      'const half = a / b / c; // three',
      'const t = `x ${ { k: "/* issue 3 */" }.k } // issue 4 ${`${1}`}`; // four',
      "const quote = '\\' // issue 5'; /* five */",
      '',
    ].join('\n');
    expect(comments(source)).toEqual(['1: // one', '2: // two', '3: // three', '4: // four', '5: /* five */']);
  });
});

/**
 * Measured figures live in docs/benchmarks.md (named by the bench that made them), not in source
 * comments, where they go stale unseen when the code or the machine changes: a comment says why,
 * and points at the section that holds the numbers.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './doc-commands.js';

/**
 * A cost in microseconds, the unit the benchmarks measure per event, key or call: `2.4 µs`,
 * `15-30 µs`. (A precision such as the spec's 100 ns timestamps is not a measurement.)
 */
const FIGURE = /\d(?:[\d.,]*\d)?(?:\s*[-–]\s*\d[\d.,]*)?\s*(?:µs|us)\b/u;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((path) => /\.(?:[cm]?ts|[cm]?js)$/.test(path))
    .map((path) => join(dir, path));
}

describe('source comments', () => {
  it('carry no measured times: the figures are in docs/benchmarks.md', () => {
    const found: string[] = [];
    for (const file of sourceFiles(join(ROOT, 'src'))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const comment = /(?:\/\/|\/\*|^\s*\*)(.*)$/.exec(line)?.[1];
          if (comment !== undefined && FIGURE.test(comment)) found.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('the check finds a figure where there is one', () => {
    expect(FIGURE.test(' costs ~2.4 µs per call')).toBe(true);
    expect(FIGURE.test(' ~15-30 µs per page')).toBe(true);
    expect(FIGURE.test(' 0.72 us per event')).toBe(true);
    expect(FIGURE.test(' waits 50 ms before it retries')).toBe(false);
  });
});

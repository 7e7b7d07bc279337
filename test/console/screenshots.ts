import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { PAGE_DIR } from '../../src/console/page-files.js';
import { underCi } from '../fixtures/ci.js';
import { REPO_ROOT } from '../cli/cli-process.js';
import { VIEWPORT } from './browser.js';

export const SCREENSHOT_DIR = join(REPO_ROOT, 'docs', 'console');
export const SCREENSHOTS = ['events', 'consumer', 'dead-letters', 'limits', 'send'] as const;
const STAMP_FILE = join(SCREENSHOT_DIR, 'screenshots.json');

/**
 * The screenshots of docs/console/ are taken by the browser test, so they show the page as it is.
 * Their pixels change on every run (times, sequences, lag), so they are rewritten only when the page
 * changed materially: when the page's files (src/console/page/), the viewport or the set of shots
 * differ from what `screenshots.json` recorded at the last rewrite, or a shot is missing. Then:
 * - on a developer's machine the test rewrites them and the stamp (commit them with the change);
 * - in CI (a fresh clone) it fails, naming the files: docs must not show a page that is gone.
 * DW_UPDATE_SCREENSHOTS=1 rewrites them anyway (to refresh the data they show).
 */
export function pageFingerprint(): string {
  const hash = createHash('sha256');
  for (const name of readdirSync(PAGE_DIR).sort())
    hash
      .update(`${name}\0`)
      .update(readFileSync(join(PAGE_DIR, name)))
      .update('\0');
  hash.update(JSON.stringify({ viewport: VIEWPORT, shots: SCREENSHOTS }));
  return hash.digest('hex');
}

/**
 * Rewrites the page's text so that a shot names no machine path: the repository's own files by their
 * path in the repository, the run's folder (handlers, sinks) by paths relative to it, and no module
 * loader query. A reader of the README sees what a project's own run shows, not the test machine.
 */
function neutralisePaths(roots: readonly string[]): string {
  return `(() => {
    const roots = ${JSON.stringify(roots)};
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const rewrite = (text) => {
      let out = text.replace(/\\?tsx-namespace=[^:)\\s]+/g, '');
      for (const root of roots) out = out.split('file://' + root + '/').join('').split(root + '/').join('');
      return out;
    };
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      const text = rewrite(node.nodeValue);
      if (text !== node.nodeValue) node.nodeValue = text;
    }
  })()`;
}

export class Screenshots {
  readonly fingerprint = pageFingerprint();
  readonly stale: boolean;
  readonly write: boolean;
  readonly #taken = new Set<string>();
  readonly #roots: readonly string[];

  /** `runDir`: the folder the run under test works in (its handlers and sinks). */
  constructor(runDir?: string) {
    // The longer root first: the run's folder may lie inside the repository.
    this.#roots = [runDir, REPO_ROOT].filter((root): root is string => root !== undefined).sort((a, b) => b.length - a.length);
    const stamp = existsSync(STAMP_FILE) ? (JSON.parse(readFileSync(STAMP_FILE, 'utf8')) as { fingerprint?: string }) : {};
    this.stale = stamp.fingerprint !== this.fingerprint || SCREENSHOTS.some((name) => !existsSync(join(SCREENSHOT_DIR, `${name}.png`)));
    this.write = process.env.DW_UPDATE_SCREENSHOTS === '1' || (this.stale && !underCi());
  }

  async take(page: Page, name: (typeof SCREENSHOTS)[number]): Promise<void> {
    this.#taken.add(name);
    if (!this.write) return;
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    // A click may have scrolled the page: the shot shows its top, as a visitor first sees it.
    await page.evaluate('window.scrollTo(0, 0)');
    await page.evaluate(neutralisePaths(this.#roots));
    await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`) });
  }

  /** After every shot: records the stamp, or says why the committed shots are out of date. */
  finish(): { problem?: string } {
    const missing = SCREENSHOTS.filter((name) => !this.#taken.has(name));
    if (missing.length > 0) return { problem: `the browser test took no screenshot of ${missing.join(', ')}` };
    if (this.write) {
      writeFileSync(
        STAMP_FILE,
        `${JSON.stringify({ fingerprint: this.fingerprint, viewport: VIEWPORT, shots: SCREENSHOTS.map((n) => `${n}.png`) }, null, 2)}\n`,
      );
      return {};
    }
    if (this.stale) {
      return {
        problem:
          'docs/console/*.png show an older page (src/console/page/ changed since): run `npx vitest run test/console/browser.test.ts` locally and commit docs/console/',
      };
    }
    return {};
  }
}

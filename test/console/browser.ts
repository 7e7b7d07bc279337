import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/**
 * Debian's Chromium (`apt-get install chromium`; .ci/browser.sh installs it in CI), driven by
 * playwright-core: never a browser a driver downloads. CHROMIUM_PATH overrides the location.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Headless, no sandbox (containers), and nothing that reaches for the network on its own. */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The size of the screenshots in docs/console/. */
export const VIEWPORT = { width: 1280, height: 800 };

export function chromiumInstalled(): boolean {
  return existsSync(CHROMIUM_PATH);
}

export interface Browser {
  page: Page;
  /** What the page printed to its console and its uncaught errors: a test fails on any error. */
  errors: string[];
  close(): Promise<void>;
}

/** A fresh browser profile (its own --user-data-dir) and one page; `extraArgs` go after CHROMIUM_FLAGS. */
export async function launchBrowser(extraArgs: readonly string[] = []): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'dw-chromium-'));
  let context: BrowserContext;
  try {
    // The profile is the --user-data-dir: playwright passes it as that flag.
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: [...CHROMIUM_FLAGS, ...extraArgs],
      viewport: VIEWPORT,
      timeout: 60_000,
    });
  } catch (err) {
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`uncaught: ${err.message}`));
  page.on('console', (message) => {
    // Answers the page expects are no errors of its own: a refusal it shows (a 400 of a bad entry),
    // the event stream dropped while the process restarts (the page reconnects).
    if (message.type() === 'error' && !/^Failed to load resource|api\/stream/.test(`${message.text()} ${message.location().url}`)) errors.push(message.text());
  });
  return {
    page,
    errors,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

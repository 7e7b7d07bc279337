/**
 * DNS rebinding, in a real browser (Debian's Chromium) against a real `durable-worker dev` process.
 * `--host-resolver-rules` makes the attacker's names resolve to 127.0.0.1, as a rebinding DNS server
 * would after the page loaded; the page itself is what the attacker's server sent before the switch
 * (playwright fulfils that one navigation), and every request it then makes goes to the local
 * servers for real, with the Host and Origin the browser sets.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { underCi } from '../fixtures/ci.js';
import { CliProcess, REPO_ROOT } from '../cli/cli-process.js';
import { tempDir } from '../worker/harness.js';
import { chromiumInstalled, CHROMIUM_PATH, launchBrowser, type Browser } from './browser.js';

const RESOLVER_RULES = '--host-resolver-rules=MAP *.evil.example 127.0.0.1, MAP evil.example 127.0.0.1, MAP *.nip.io 127.0.0.1';
/**
 * Chromium's own defence (Private/Local Network Access: a public page's request to loopback is blocked
 * in the browser) turned off: Firefox and Safari have none, and the servers must hold without it.
 */
const NO_BROWSER_DEFENCE =
  '--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults';
const ATTACKER_NAMES = ['evil.example', '127.0.0.1.evil.example', 'localhost.evil.example', '127.evil.example', '127.0.0.1.nip.io'];
const EVENTS = JSON.stringify({ events: [{ type: 'source_entry.updated', subject: 'x', data: null }] });

interface Attempt {
  method: string;
  path: string;
  body?: string;
}

/** What the attacker's page does once its name points at 127.0.0.1: same-origin requests, statuses read. */
async function attackFrom(page: Page, origin: string, attempts: readonly Attempt[]): Promise<number[]> {
  await page.route(`${origin}/`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>a page on the web</title>' }));
  await page.goto(`${origin}/`);
  return page.evaluate(
    async (list) =>
      Promise.all(
        list.map(async ({ method, path, body }) => {
          const res = await fetch(path, { method, ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }) });
          return res.status;
        }),
      ),
    attempts as Attempt[],
  );
}

if (!chromiumInstalled() && !underCi()) {
  describe.skip(`SKIPPED: the rebinding browser test needs Chromium at ${CHROMIUM_PATH} (apt-get install -y chromium, or bash .ci/browser.sh)`, () => {});
} else {
  describe("a web page that rebinds its name to 127.0.0.1 drives none of dev's local servers", { timeout: 90_000 }, () => {
    let dev: CliProcess;
    let browser: Browser;
    const ports = { emulator: '', console: '', metrics: '' };

    const state = async () =>
      (await (await fetch(`http://127.0.0.1:${ports.emulator}/_emulator/state`)).json()) as {
        tenants: Array<{ id: string; head: string | null; consumers: Array<{ id: string; paused: boolean }> }>;
      };

    beforeAll(async () => {
      const dir = tempDir('rebinding-browser');
      dev = new CliProcess(
        [
          'dev',
          '--port',
          '0',
          '--console-port',
          '0',
          '--metrics-port',
          '0',
          '--handlers',
          join(REPO_ROOT, 'test/fixtures/cli-run-handlers'),
          '--isolation',
          'none',
          '--idempotency',
          'memory',
          '--dead-letter',
          `file:${join(dir, 'dead.jsonl')}`,
        ],
        { cwd: dir },
      );
      ports.emulator = (await dev.waitForOutput(/emulator listening on http:\/\/127\.0\.0\.1:(\d+)/, 60_000))[1]!;
      ports.console = (await dev.waitForOutput(/Open the console: http:\/\/127\.0\.0\.1:(\d+)/, 60_000))[1]!;
      ports.metrics = (await dev.waitForOutput(/metrics at http:\/\/127\.0\.0\.1:(\d+)/, 60_000))[1]!;
      browser = await launchBrowser([RESOLVER_RULES, NO_BROWSER_DEFENCE]);
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      dev?.kill('SIGTERM');
      await dev?.exited;
    });

    it.each(ATTACKER_NAMES)('%s: the console, the emulator and the metrics answer 403 to reads and changes; nothing changed', async (name) => {
      const before = await state();
      const console_ = await attackFrom(browser.page, `http://${name}:${ports.console}`, [
        { method: 'GET', path: '/api/events' },
        { method: 'POST', path: '/api/consumer/pause', body: '{}' },
        { method: 'PUT', path: '/api/faults', body: '{"errorRate":1}' },
        { method: 'POST', path: '/api/dead-letters/purge', body: '{"ids":["x"]}' },
        { method: 'POST', path: '/api/send', body: '{"sourceId":"s","entries":[{"id":"e","properties":[]}]}' },
      ]);
      expect(console_).toEqual([403, 403, 403, 403, 403]);
      const emulator = await attackFrom(browser.page, `http://${name}:${ports.emulator}`, [
        { method: 'GET', path: '/_emulator/state' },
        { method: 'POST', path: '/_emulator/tenants/dev-tenant/events', body: EVENTS },
        { method: 'POST', path: '/_emulator/faults', body: '{"errorRate":1}' },
        { method: 'POST', path: '/_emulator/applications', body: '{"clientId":"evil","clientSecret":"evil","scopes":["read:events"]}' },
        { method: 'POST', path: '/v1/event-destinations/dev-consumer/pause' },
      ]);
      expect(emulator).toEqual([403, 403, 403, 403, 403]);
      expect(await attackFrom(browser.page, `http://${name}:${ports.metrics}`, [{ method: 'GET', path: '/metrics' }])).toEqual([403]);
      const after = await state();
      expect(after.tenants.map((t) => [t.id, t.head, t.consumers.map((c) => c.paused)])).toEqual(
        before.tenants.map((t) => [t.id, t.head, t.consumers.map((c) => c.paused)]),
      );
    });

    it('a page elsewhere posting to 127.0.0.1 itself (its Origin another site) changes nothing either', async () => {
      const before = await state();
      await browser.page.route('http://evil.example:8080/', (route) =>
        route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>elsewhere</title>' }),
      );
      await browser.page.goto('http://evil.example:8080/');
      await browser.page.evaluate(
        async ({ port, body }) => {
          // A "simple" request: no preflight, the answer unreadable, the change made if the server takes it.
          await fetch(`http://127.0.0.1:${port}/_emulator/tenants/dev-tenant/events`, {
            method: 'POST',
            mode: 'no-cors',
            body,
            headers: { 'content-type': 'text/plain' },
          }).catch(() => undefined);
        },
        { port: ports.emulator, body: EVENTS },
      );
      expect((await state()).tenants.find((t) => t.id === 'dev-tenant')?.head).toBe(before.tenants.find((t) => t.id === 'dev-tenant')?.head);
    });

    it('the console itself, at localhost and 127.0.0.1, loads and works', async () => {
      for (const host of ['localhost', '127.0.0.1']) {
        const res = await browser.page.goto(`http://${host}:${ports.console}/`);
        expect(res?.status(), host).toBe(200);
        await expect.poll(() => browser.page.title()).toBe('durable-worker console');
        const statuses = await browser.page.evaluate(async () => [
          (await fetch('/api/info')).status,
          (await fetch('/api/consumer/resume', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status,
        ]);
        expect(statuses, host).toEqual([200, 200]);
      }
      expect(browser.errors).toEqual([]);
    });
  });
}

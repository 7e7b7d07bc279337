/**
 * The console in a real browser (Debian's headless Chromium driven by playwright-core) on a real
 * `durable-worker dev --demo` process: what a developer does with it, step by step. The steps share
 * one dev process and one page, in order; the last restarts the process.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { underCi } from '../fixtures/ci.js';
import { CliProcess } from '../cli/cli-process.js';
import { tempDir, waitFor } from '../worker/harness.js';
import { chromiumInstalled, CHROMIUM_PATH, launchBrowser, type Browser } from './browser.js';
import { Screenshots } from './screenshots.js';

/** The handler of the demo's events; poison entries are dead-lettered until it is fixed (`broken` false). */
function shopHandler(broken: boolean): string {
  return `export default {
  [Symbol.for('durable-worker.handler')]: true,
  type: 'source_entry.updated',
  async handle(event, ctx) {
    const name = event.data.current.properties.find((p) => p.id === 'name')?.value;
    ctx.log.info({ entry: event.subject, name }, \`entry \${event.subject} is \${name}\`);
    if (${broken} && event.subject.startsWith('poison')) throw Object.assign(new Error(\`cannot take \${event.subject}\`), { code: 'DW_ERR_PERMANENT' });
  },
};
`;
}

/** A handler with limits on the demo's events: 2 starts a second, one at a time, slow; product-1's first attempt is throttled. */
function quotaHandler(): string {
  return `export default {
  [Symbol.for('durable-worker.handler')]: true,
  type: 'source_entry.updated',
  limits: { rate: { max: 2, per: '1s' }, concurrency: 1, adaptive: true },
  async handle(event, ctx) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    if (event.subject === 'product-1' && ctx.attempt === 1) throw Object.assign(new Error('the quota API answered 429'), { code: 'DW_ERR_RETRY_LATER', retryAfterMs: 1000 });
  },
};
`;
}

interface Dev {
  cli: CliProcess;
  consoleUrl: string;
  emulatorUrl: string;
}

const dir = tempDir('console-browser');
const handlers = join(dir, 'handlers');

async function startDev(consolePort = '0'): Promise<Dev> {
  // A short lease, so that a batch whose ack was lost to a fault is redelivered within seconds.
  const cli = new CliProcess(
    [
      'dev',
      '--demo',
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--metrics-host',
      '127.0.0.1',
      '--console-port',
      consolePort,
      '--handlers',
      handlers,
      '--visibility',
      '3',
      '--idempotency',
      `sqlite:${join(dir, 'idempotency.sqlite')}`,
      '--dead-letter',
      `file:${join(dir, 'dead-letter.jsonl')}`,
    ],
    { cwd: dir },
  );
  try {
    const [, emulatorUrl] = await cli.waitForOutput(/emulator listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
    const [, consoleUrl] = await cli.waitForOutput(/Open the console: (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
    return { cli, consoleUrl: consoleUrl!, emulatorUrl: emulatorUrl! };
  } catch (err) {
    cli.kill('SIGKILL');
    throw err;
  }
}

async function stopDev(dev: Dev): Promise<void> {
  dev.cli.kill('SIGTERM');
  const result = await dev.cli.exited;
  expect(result.code, result.stderr).toBe(0);
}

/** Waits until the element shows this text (innerText does not wait: the page fills in as answers come). */
async function shows(locator: Locator, text: string | RegExp): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor();
}

/** The attempt of a row of the Events list (its 4th column). */
const attemptOf = (row: Locator) => row.locator('td:nth-child(4)').innerText().then(Number);

if (!chromiumInstalled() && !underCi()) {
  describe.skip(`SKIPPED: the console's browser tests need Chromium at ${CHROMIUM_PATH} (apt-get install -y chromium, or bash .ci/browser.sh)`, () => {});
} else {
  describe('the console in a browser, on dev --demo', { timeout: 90_000 }, () => {
    const shots = new Screenshots(dir);
    let dev: Dev;
    let browser: Browser;
    let page: Page;

    beforeAll(async () => {
      mkdirSync(handlers, { recursive: true });
      writeFileSync(join(handlers, 'shop.mjs'), shopHandler(true));
      [dev, browser] = await Promise.all([startDev(), launchBrowser()]);
      page = browser.page;
      page.setDefaultTimeout(30_000);
    }, 120_000);

    afterEach(async () => {
      // A step that failed half-way must not leave its faults to the next ones.
      await fetch(`${dev.emulatorUrl}/_emulator/faults`, { method: 'DELETE' }).catch(() => {});
    });

    afterAll(async () => {
      await browser?.close();
      dev?.cli.kill('SIGKILL');
    });

    it('shows the demo events as they flow, each with its handler outcome; an event opened shows its data and log lines', async () => {
      await page.goto(dev.consoleUrl);
      await page.locator('#connection[data-state="live"]').waitFor();
      await shows(page.locator('#destination'), /^consumer dev-consumer$/);
      const ok = page.locator('table.events tbody tr[data-status="ok"]').filter({ has: page.locator('.run[data-handler="shop"][data-outcome="ok"]') });
      await ok.first().waitFor();
      // Rows come and go above it as events arrive: hold on to this one by its id.
      const row = page.locator(`table.events tbody tr[data-id="${await ok.first().getAttribute('data-id')}"]`);
      const subject = await row.locator('td.subject').innerText();
      expect(subject).toMatch(/^product-\d+$/);
      await row.click();
      const run = page.locator('#event-detail .run-detail[data-handler="shop"][data-outcome="ok"]');
      await run.waitFor();
      await shows(run.locator('.logs'), new RegExp(`info  entry ${subject} is \\w+`));
      await shows(page.locator('#event-detail pre.data'), '"sourceId": "demo-products"');
      await shows(page.locator('#event-detail table.deliveries tbody tr').first(), 'ok → committed');
    });

    it("ingests an entry through the form and shows its event arriving; a bad entry gets the emulator's errors beside its fields", async () => {
      await page.goto(`${dev.consoleUrl}/#/send`);
      // A value the form cannot read is caught before anything is sent.
      await page.locator('.property-row[data-row="1"] input[name="value"]').fill('not a number');
      await page.locator('#send-button').click();
      await shows(page.locator('.field-error[data-error-for="entries[0].properties[1].value"]'), 'number: not a number');
      await shows(page.locator('.form-errors'), 'nothing was sent');
      // What the emulator refuses comes back by field: no entry id, an object as a value.
      await page.locator('.property-row[data-row="1"] input[name="value"]').fill('24.5');
      await page.locator('#add-property').click();
      const tags = page.locator('.property-row[data-row="2"]');
      await tags.locator('input[name="id"]').fill('tags');
      await tags.locator('select[name="kind"]').selectOption('list (JSON)');
      await tags.locator('input[name="value"]').fill('{"color": "red"}');
      await page.locator('#send-button').click();
      await shows(page.locator('.field-error[data-error-for="entries[0].id"]'), 'entry id must be a non-empty string');
      await shows(page.locator('.field-error[data-error-for="entries[0].properties[2].value"]'), 'value must be');
      await shots.take(page, 'send');
      await tags.locator('button.remove').click();
      await page.locator('#send-form input[name="entryId"]').fill('sent-1');
      await page.locator('#send-button').click();
      await shows(page.locator('#send-result .ok'), 'Accepted 1 entry into demo-products');
      await expect(page.locator('.field-error').count()).resolves.toBe(0);

      await page.locator('nav a[data-page="events"]').click();
      await page.locator('input.filter').fill('sent-1');
      await page.locator('table.events tbody tr[data-status="ok"]', { hasText: 'sent-1' }).waitFor();
    });

    it('pauses and resumes the consumer', async () => {
      await page.goto(`${dev.consoleUrl}/#/consumer`);
      await page.locator('.stat[data-stat="state"] .value', { hasText: 'running' }).waitFor();
      await page.locator('#pause-button').click();
      await page.locator('.stat[data-stat="state"] .value', { hasText: 'paused' }).waitFor();
      const state = async () =>
        (await (await fetch(`${dev.emulatorUrl}/_emulator/state`)).json()) as { tenants: Array<{ consumers: Array<{ id: string; paused: boolean }> }> };
      expect((await state()).tenants[0]!.consumers.find((c) => c.id === 'dev-consumer')!.paused).toBe(true);
      await page.locator('#pause-button[data-paused="true"]').click();
      await page.locator('.stat[data-stat="state"] .value', { hasText: 'running' }).waitFor();
      expect((await state()).tenants[0]!.consumers.find((c) => c.id === 'dev-consumer')!.paused).toBe(false);
    });

    it('5xx answers: acks fail, then pulls too; the lease expires, and once the platform answers again the batch comes back with a higher attempt', async () => {
      await page.goto(`${dev.consoleUrl}/#/consumer`);
      const fault = async (routes: string[]) => {
        await page.locator('input[name="errorRate"]').fill('1');
        for (const route of ['ack', 'pull']) await page.locator(`input[name="errorRoutes"][value="${route}"]`).setChecked(routes.includes(route));
        await page.locator('#apply-faults').click();
        await page.locator('.form-status', { hasText: 'faults applied' }).waitFor();
        const faults = (await (await fetch(`${dev.emulatorUrl}/_emulator/faults`)).json()) as { errorRate?: number; errorRoutes?: string[] };
        expect([faults.errorRate, faults.errorRoutes?.sort()]).toEqual([1, [...routes].sort()]);
      };
      // Acks fail: the worker retries each ack until its lease expires, and holds the lease meanwhile.
      await fault(['ack']);
      const held = page.locator('table.leases tbody tr[data-lease]');
      await held.first().waitFor();
      await shows(held.first().locator('td.countdown'), /^\d+ s$/);
      await shots.take(page, 'consumer');
      // Pulls fail too: the worker cannot take the lease back, and it expires.
      await fault(['ack', 'pull']);
      await page.locator('.stat[data-stat="pending"] .value', { hasNotText: /^0$/ }).waitFor();
      await page.locator('#clear-faults').click();
      await shows(page.locator('.form-status'), 'no fault any more');

      // Redelivered, and done in a moment: in Events, an event with attempt 2 or more, whose acks
      // failed; handled once, then skipped as done (duplicate).
      await page.goto(`${dev.consoleUrl}/#/events`);
      const redeliveredId = await page.waitForFunction(
        // In the page: the id of a row done with an attempt of 2 or more.
        () =>
          [...(globalThis as any).document.querySelectorAll('table.events tbody tr[data-status="ok"]')].find((tr) => Number(tr.children[3]?.textContent) >= 2)
            ?.dataset.id as string | undefined,
        undefined,
        { timeout: 30_000 },
      );
      const again = page.locator(`table.events tbody tr[data-id="${await redeliveredId.jsonValue()}"]`);
      expect(await attemptOf(again)).toBeGreaterThanOrEqual(2);
      await again.click();
      const deliveries = page.locator('#event-detail table.deliveries tbody tr');
      await shows(deliveries, 'ok → error');
      await page.locator('#event-detail .run-detail[data-outcome="duplicate"]').first().waitFor();
    });

    it('dead-lettered events, their handler fixed: one replayed from its row, two selected and replayed, one purged', async () => {
      const send = async (entryId: string) => {
        await page.goto(`${dev.consoleUrl}/#/send`);
        await page.locator('#send-form input[name="entryId"]').fill(entryId);
        await page.locator('#send-button').click();
        await page.locator('#send-result .ok').waitFor();
      };
      for (const entryId of ['poison-1', 'poison-2', 'poison-3']) await send(entryId);

      await page.locator('nav a[data-page="events"]').click();
      const idOf = async (subject: string) => {
        const row = page
          .locator('table.events tbody tr[data-status="dead_lettered"]')
          .filter({ has: page.locator('td.subject', { hasText: new RegExp(`^${subject}$`) }) });
        await row.waitFor();
        return (await row.getAttribute('data-id'))!;
      };
      const [first, second, third] = [await idOf('poison-1'), await idOf('poison-2'), await idOf('poison-3')];
      await page.locator(`table.events tbody tr[data-id="${first}"]`).click();
      const run = page.locator('#event-detail .run-detail[data-outcome="dead_lettered"]');
      await shows(run.locator('p.error'), /^DW_ERR_PERMANENT: cannot take poison-1$/);
      await shows(run.locator('pre.stack'), /^Error: cannot take poison-1\n\s+at /);

      await page.locator('nav a[data-page="dead-letters"]').click();
      const record = (eventId: string, state: string) => page.locator(`table.dead-letters tr[data-id="shop:${eventId}"][data-state="${state}"]`);
      for (const eventId of [first, second, third]) await record(eventId, 'dead').waitFor();
      await record(first, 'dead').locator('td.link').click();
      await page.locator('tr.expanded pre.stack').waitFor();
      await shots.take(page, 'dead-letters');

      writeFileSync(join(handlers, 'shop.mjs'), shopHandler(false));
      await record(first, 'dead').locator('button.replay-one').click();
      await shows(page.locator('#dead-letter-report p.ok'), /^1 record\(s\): 1 replayed$/);
      await record(first, 'dead').waitFor({ state: 'detached' });
      for (const eventId of [second, third]) await record(eventId, 'dead').locator('input[type="checkbox"]').check();
      await page.locator('#replay-selected').click();
      await shows(page.locator('#dead-letter-report p.ok'), /^2 record\(s\): 2 replayed$/);
      await page.locator('#dead-letter-state').selectOption('all');
      for (const eventId of [first, second, third]) await record(eventId, 'replayed').waitFor();
      // Purge asks first.
      page.once('dialog', (dialog) => void dialog.accept());
      await record(third, 'replayed').locator('input[type="checkbox"]').check();
      await page.locator('#purge-selected').click();
      await shows(page.locator('#dead-letter-report p.ok'), /^1 record\(s\) purged$/);
      await record(third, 'purged').waitFor();

      await page.goto(`${dev.consoleUrl}/#/events/${first}`);
      await page.locator(`table.events tbody tr[data-id="${first}"][data-status="replayed"]`).waitFor();
      await page.locator('#event-detail .run-detail[data-outcome="replayed"]').waitFor();
      // The replay ran the fixed handler in a fresh thread: its log line is the event's too.
      await shows(page.locator('#event-detail .run-detail[data-outcome="replayed"] .logs'), 'entry poison-1 is Kettle');
      await shots.take(page, 'events');
    });

    it('the Limits page: none declared; a saved handler that declares limits shows them, its runs waiting and its 429s; gone again when deleted', async () => {
      await page.goto(`${dev.consoleUrl}/#/limits`);
      await shows(page.locator('#limits-summary'), 'No handler declares limits');
      // The demo ingests 2 entries a second; this handler takes 1 at a time and says "429" to product-1's first attempts.
      writeFileSync(join(handlers, 'quota.mjs'), quotaHandler());
      const row = page.locator('table.limits tbody tr[data-handler="quota"]');
      await shows(row.locator('td.declared'), /^rate 2 \/ 1 s · concurrency 1 · adaptive$/);
      await shows(page.locator('#limits-summary'), 'The limits hold in this process');
      await shows(row.locator('td.throttles'), /^[1-9]/);
      // Halved at the first 429, then climbing back: the number depends on when the page is read.
      await shows(row.locator('td.allowed'), /^\d+(\.\d+)? \/s \(declared 2 \/s\)$/);
      // Runs wait for a permit: in their lease, or (longer than the lease holds) deferred to the store.
      // A function, not a string: the console's CSP refuses eval, which a string predicate needs.
      await page.waitForFunction(() => {
        const cell = (name: string) => Number((globalThis as any).document.querySelector(`tr[data-handler="quota"] td.${name}`)?.textContent ?? '0');
        return cell('waiting') + cell('deferred') > 0;
      });
      await shots.take(page, 'limits');
      rmSync(join(handlers, 'quota.mjs'));
      await row.waitFor({ state: 'detached' });
      await shows(page.locator('#limits-summary'), 'No handler declares limits');
    });

    it('takes every screenshot of docs/console/ (rewritten only when the page changed)', () => {
      expect(shots.finish().problem).toBeUndefined();
    });

    it("reconnects when the worker restarts, and shows the new process's events", async () => {
      await page.goto(`${dev.consoleUrl}/#/events`);
      await page.locator('#connection[data-state="live"]').waitFor();
      const port = new URL(dev.consoleUrl).port;
      await stopDev(dev);
      await page.locator('#connection[data-state="reconnecting"]').waitFor();
      dev = await startDev(port);
      await page.locator('#connection[data-state="live"]').waitFor();
      await page.locator('.notice', { hasText: 'the worker restarted' }).waitFor();
      await page.locator('table.events tbody tr[data-status="ok"]').first().waitFor();
      await stopDev(dev);
      expect(browser.errors).toEqual([]);
    });
  });
}

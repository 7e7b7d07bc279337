import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceEntry } from '../../src/emulator/sources/schemas.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import type { OperationSpec } from '../../src/emulator/openapi/operation.js';
import { ROOT } from '../docs/doc-commands.js';
import { CliProcess } from '../cli/cli-process.js';
import { childAnswersCheckedCount, takeResponseViolations } from '../setup/emulator-responses.js';
import { testOperation } from './helpers.js';

/**
 * The suite's response check (test/setup/emulator-responses.ts): every answer an emulator writes in
 * a test is checked against the OpenAPI description of its route. Here, answers that break their
 * declaration on purpose, and what the check says about them.
 */

const entryRoute: OperationSpec = { ...testOperation('GET', '/v1/test/entry'), responses: { '200': { description: 'An entry.', schema: SourceEntry } } };

let emulator: RunningEmulator;
let answer: { status: number; body?: unknown; headers?: Record<string, string> };

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, modules: [(ctx) => ctx.router.add(entryRoute, () => answer)] });
});
afterAll(() => emulator?.close());

async function violationsOf(reply: typeof answer): Promise<string[]> {
  answer = reply;
  await fetch(`${emulator.url}/v1/test/entry`);
  return takeResponseViolations();
}

describe('the response check of the test suite', () => {
  it('a wrong body names the route and the field', async () => {
    const violations = await violationsOf({
      status: 200,
      body: { id: 'e', properties: [{ id: 'p', value: 1, type: 'Integer', delimiter: null, language: null }], lastUpdated: '2026-01-01T00:00:00.000Z' },
    });
    expect(violations).toEqual([
      expect.stringContaining("GET /v1/test/entry (test GET /v1/test/entry) answered 200: body.properties[0] must have required property 'lastUpdated'"),
    ]);
  });

  it('a member the description does not allow, and a wrong type, are named', async () => {
    const violations = await violationsOf({ status: 200, body: { id: 5, properties: [], lastUpdated: '2026-01-01T00:00:00.000Z', extra: true } });
    expect(violations.join('\n')).toContain('body.id must be string (got 5)');
    expect(violations.join('\n')).toContain('body must NOT have additional properties (extra)');
  });

  it('an undeclared status fails', async () => {
    const violations = await violationsOf({ status: 418, body: { id: 'e', properties: [], lastUpdated: '2026-01-01T00:00:00.000Z' } });
    expect(violations).toEqual([expect.stringMatching(/answered 418: status 418 is not declared \(declared: .*200.*\)/)]);
  });

  it('a media type other than the declared one fails', async () => {
    const violations = await violationsOf({
      status: 200,
      body: { id: 'e', properties: [], lastUpdated: '2026-01-01T00:00:00.000Z' },
      headers: { 'content-type': 'text/plain' },
    });
    expect(violations).toEqual([expect.stringContaining('content-type text/plain is not the declared application/json')]);
  });

  it('a matching answer, an implied status (401 problem) and a request without a route pass', async () => {
    expect(await violationsOf({ status: 200, body: { id: 'e', properties: [], lastUpdated: '2026-01-01T00:00:00.000Z' } })).toEqual([]);
    await fetch(`${emulator.url}/v1/sources/s/entries?id=a`);
    await fetch(`${emulator.url}/no/such/route`);
    expect(await takeResponseViolations()).toEqual([]);
  });

  it('checks the answers of an emulator in a child process too (durable-worker emulator)', async () => {
    const before = childAnswersCheckedCount();
    const cli = new CliProcess(['emulator', '--port', '0']);
    try {
      const [, url] = await cli.waitForOutput(/emulator listening on (http:\/\/127\.0\.0\.1:\d+)/);
      expect((await fetch(`${url}/_emulator/state`)).status).toBe(200);
      expect((await fetch(`${url}/v1/managed-tags`)).status).toBe(401);
      cli.kill('SIGTERM');
      expect((await cli.exited).code).toBe(0);
    } finally {
      cli.kill('SIGKILL');
    }
    expect(await takeResponseViolations()).toEqual([]);
    expect(childAnswersCheckedCount() - before).toBe(2);
  });

  it('fails the test that received the answer, with the route and the field in the message', () => {
    const run = spawnSync(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'test/fixtures/openapi-hook/vitest.config.ts'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      timeout: 120_000,
    });
    const output = run.stdout + run.stderr;
    expect(run.status, output).toBe(1);
    expect(output).toContain('FAIL');
    expect(output).toContain('receives a lease batch whose sequence is a number');
    expect(output).toContain('POST /v1/broken/pull (test POST /v1/broken/pull) answered 200: body.events[0]');
    expect(output).toContain('sequence');
  });
});

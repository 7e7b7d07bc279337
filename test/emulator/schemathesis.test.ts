/**
 * An independent check of the published descriptions: Schemathesis (Python, from PyPI, installed
 * by .ci/schemathesis.sh) generates requests from each document served by a running emulator, with
 * a fixed seed and every default check (server errors, statuses, content types, headers and bodies
 * against the document, valid data accepted, invalid data rejected, authentication, stateful
 * links), over every operation. The fault routes run on their own, since a fault they set would
 * disturb the others, and are cleared after. Settings and the reasons for each per-operation
 * expectation: schemathesis/schemathesis.toml. A failing case prints Schemathesis's report, with
 * a curl command that reproduces it against `npx durable-worker emulator`.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { underCi } from '../fixtures/ci.js';
import { waitFor } from '../fixtures/wait-for.js';
import { tempDir } from '../worker/harness.js';
import { call } from './helpers.js';

const VERSION = '4.32.5';
/** `.ci/schemathesis.sh` exports SCHEMATHESIS_BIN; locally, the venv that script makes. */
const ST = process.env.SCHEMATHESIS_BIN ?? join(homedir(), '.cache/durable-worker-ci', `schemathesis-${VERSION}`, 'bin/st');
const CONFIG = join(import.meta.dirname, 'schemathesis/schemathesis.toml');
const SEED = '20261207';
const FAULT_ROUTES = '^/_emulator/faults$';
const RUN_TIMEOUT_MS = 540_000;

interface StRun {
  code: number | null;
  output: string;
}

function st(args: readonly string[], cwd: string): Promise<StRun> {
  return new Promise((resolve, reject) => {
    // --output-sanitize false: the curl reproductions carry the (development, documented) API key.
    // One worker: the same seed gives the same requests in the same order (and Python 3.11's ast
    // module, which Hypothesis calls, can fail when two threads parse at once).
    const child = spawn(
      ST,
      ['--config-file', CONFIG, 'run', ...args, '--seed', SEED, '--workers', '1', '--no-color', '--output-sanitize', 'false', '--generation-database', 'none'],
      {
        cwd,
        env: { ...process.env, NO_COLOR: '1', COLUMNS: '160' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** The run passed: exit 0, every generated case passed, and which operations it covered. */
function expectClean(run: StRun, label: string): { selected: number; total: number } {
  // The whole report on failure: each failing case with its "Reproduce with: curl ..." line.
  if (run.code !== 0) console.error(`Schemathesis, ${label}:\n${run.output}`);
  expect(run.code, `schemathesis ${label} exited ${run.code}; its report is printed above`).toBe(0);
  const cases = /(\d+) generated, (\d+) passed/.exec(run.output);
  expect(cases, run.output.slice(-2000)).not.toBeNull();
  expect(Number(cases![1])).toBeGreaterThan(0);
  expect(cases![2]).toBe(cases![1]);
  const operations = /Operations:\s+(\d+) selected \/ (\d+) total/.exec(run.output);
  expect(operations, run.output.slice(0, 2000)).not.toBeNull();
  return { selected: Number(operations![1]), total: Number(operations![2]) };
}

if (!existsSync(ST) && !underCi()) {
  describe.skip(`SKIPPED: the Schemathesis test needs ${ST} (bash .ci/schemathesis.sh installs it)`, () => {});
} else {
  describe(`Schemathesis ${VERSION} against the emulator, every default check, seed ${SEED}`, { timeout: 2 * RUN_TIMEOUT_MS }, () => {
    let em: RunningEmulator;
    let cwd: string;
    let noFaults: unknown;
    const auth = ['--header', 'x-api-key: dev-api-key'];

    beforeAll(async () => {
      cwd = tempDir('schemathesis');
      em = await startEmulator({ port: 0 });
      noFaults = (await call('GET', `${em.url}/_emulator/faults`)).body;
      // The documents' examples name source `products`, entry `product-1`, property `price`: with
      // them there, reads and metadata changes get past 404 to their own rules.
      const headers = { 'x-api-key': 'dev-api-key' };
      const seeded = await call('POST', `${em.url}/sources/products`, {
        headers,
        json: { entries: [{ id: 'product-1', properties: [{ id: 'price', value: 9.5 }] }] },
      });
      expect(seeded.status, seeded.text).toBe(202);
      await waitFor(
        'the seeded entry readable',
        async () => (await call('GET', `${em.url}/v1/sources/products/entries/product-1`, { headers })).status === 200,
        10_000,
        50,
      );
    }, 30_000);
    afterAll(async () => {
      await em?.close();
    });

    it('is the pinned version', async () => {
      const version = await new Promise<string>((resolve, reject) => {
        const child = spawn(ST, ['--version'], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
        child.on('error', reject);
        child.on('close', () => resolve(out));
      });
      expect(version).toContain(VERSION);
    });

    it('the whole API (platform-api.json): every operation, the fault routes in a run of their own, then cleared: 0 failures', async () => {
      const document = `${em.url}/openapi/platform-api.json`;
      const main = expectClean(await st([document, ...auth, '--exclude-path-regex', FAULT_ROUTES], cwd), 'platform-api.json without the fault routes');
      const faults = expectClean(await st([document, ...auth, '--include-path-regex', FAULT_ROUTES], cwd), 'the fault routes');
      expect(faults.selected).toBeGreaterThan(0);
      expect(main.selected + faults.selected).toBe(main.total);
      expect((await call('DELETE', `${em.url}/_emulator/faults`)).status).toBe(204);
      expect((await call('GET', `${em.url}/_emulator/faults`)).body).toEqual(noFaults);
    });

    it('the ingest interface (ingest.json): every operation, 0 failures', async () => {
      const run = expectClean(await st([`${em.url}/openapi.json`, ...auth], cwd), 'ingest.json');
      expect(run.selected).toBe(run.total);
    });
  });
}

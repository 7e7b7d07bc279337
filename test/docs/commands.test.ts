/**
 * Docs cannot rot: every shell command of README.md, docs/ and the developer examples' READMEs is
 * either run here (as written, with only ports, secrets and hosts swapped for test ones) or mapped to
 * the test that runs it. A new command without a mapping fails the first test.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { startEmulator } from '../../src/emulator/index.js';
import { underCi } from '../fixtures/ci.js';
import { waitFor } from '../fixtures/wait-for.js';
import { ROOT, allDocCommands, commandsOf } from './doc-commands.js';

type Coverage = { kind: 'here' } | { kind: 'test'; file: string; proof: string } | { kind: 'manual'; why: string };

const HERE: Coverage = { kind: 'here' };
/** docs/client.md: generating a Python client from the whole API's OpenAPI description (run together, in order). */
const PYTHON_CLIENT_COMMANDS = [
  'python3 -m venv .venv && . .venv/bin/activate',
  'pip install openapi-python-client==0.29.1',
  'openapi-python-client generate --path docs/openapi/platform-api.json --meta none --output-path platform_api_client',
];
const REAL_PLATFORM_RUN =
  'npx durable-worker run --base-url https://api.example.com --tenant my-tenant --client-id "$CLIENT_ID" --client-secret-file /run/secrets/client-secret --destination my-consumer --handlers ./handlers';

const TRACING_CURL =
  'curl -s -X POST http://127.0.0.1:8787/sources/products -H \'x-api-key: dev-api-key\' -H \'content-type: application/json\' -H \'traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\' -d \'{"entries":[{"id":"kettle","properties":[{"id":"title","value":"Kettle"}]}]}\'';

const COVERAGE: Record<string, Coverage> = {
  // `npm ci` is the first step of CI itself (.ci/run); the dev part runs below.
  'npm ci && npx durable-worker dev --demo': HERE,
  'npm test': { kind: 'test', file: '.ci/run', proof: 'npm test' },
  // README, starting a project: packed, init from the tarball in an empty folder, then the commands it prints.
  'npm pack --pack-destination ~/work': { kind: 'test', file: 'test/cli/pack-project.ts', proof: "npm(['pack'" },
  'cd ~/work': { kind: 'manual', why: 'changes folder: test/cli/init-from-pack.test.ts works in a temp folder holding the tarball' },
  'npx ./durable-worker-0.1.0.tgz init my-worker': { kind: 'test', file: 'test/cli/init-from-pack.test.ts', proof: "'init', 'my-worker'" },
  'cd my-worker': { kind: 'test', file: 'test/cli/init-from-pack.test.ts', proof: "'cd my-worker'" },
  'npm install': { kind: 'test', file: 'test/cli/init-from-pack.test.ts', proof: "npm(['install'], project)" },
  'npm run dev -- --demo': { kind: 'test', file: 'test/cli/init-from-pack.test.ts', proof: "'run', 'dev', '--', '--demo'" },
  'npx durable-worker dev --demo': HERE,
  'npx durable-worker check': HERE,
  'curl -s http://127.0.0.1:9464/metrics | grep durable_worker_runs_total': HERE,
  [REAL_PLATFORM_RUN]: HERE,
  'npx durable-worker run --help': HERE,
  'helm lint --strict helm/durable-worker -f helm/durable-worker/examples/standalone-values.yaml': {
    kind: 'test',
    file: 'test/deploy/helm-chart.test.ts',
    proof: "'lint', '--strict', CHART_DIR, '-f', STANDALONE_VALUES",
  },
  'helm install my-worker helm/durable-worker -f my-values.yaml': {
    kind: 'manual',
    why: 'needs a Kubernetes cluster; test/deploy/helm-chart.test.ts renders and lints the chart it installs',
  },
  'PORT=3000 node --import tsx examples/forward-to-webhook/app.ts': {
    kind: 'test',
    file: 'examples/forward-to-webhook/forward.test.ts',
    proof: 'also runs as a standalone process',
  },
  'npx durable-worker dev --demo --forward-url http://127.0.0.1:3000/events': HERE,
  'export DATABASE_URL=postgres://app:app@127.0.0.1:5432/app': { kind: 'manual', why: 'sets the environment of the next command (CI sets DATABASE_URL)' },
  'npx durable-worker dev --demo --handlers examples/sync-to-postgres/handlers': HERE,
  // Runs the example's setup (connects to DATABASE_URL, creates the table) and teardown: CI sets DATABASE_URL.
  'npx durable-worker check --setup --handlers examples/sync-to-postgres/handlers': HERE,
  'npx vitest run examples/sync-to-postgres': { kind: 'test', file: 'examples/sync-to-postgres/sync.test.ts', proof: "describe('examples/sync-to-postgres'" },
  'npx durable-worker check --handlers examples/typescript-handlers/handlers': HERE,
  'npx durable-worker emulator &': { kind: 'test', file: 'test/cli/emulator.test.ts', proof: "'emulator'" },
  'npx durable-worker emulator --host 0.0.0.0 --allowed-hosts emulator': {
    kind: 'test',
    file: 'test/cli/host-guard.test.ts',
    proof: "'--allowed-hosts', 'emulator,",
  },
  'export DURABLE_WORKER_BASE_URL=http://127.0.0.1:8787 DURABLE_WORKER_TENANT=dev-tenant DURABLE_WORKER_CLIENT_ID=dev-client DURABLE_WORKER_CLIENT_SECRET=dev-secret':
    {
      kind: 'manual',
      why: 'sets the environment of the next command',
    },
  'npx durable-worker run --destination dev-consumer --handlers examples/platform-api/handlers': {
    kind: 'test',
    file: 'examples/platform-api/platform-api.test.ts',
    proof: 'startWorker(',
  },
  'DESTINATION_GLOBAL_URL=http://127.0.0.1:8787 DESTINATION_CUSTOMER=acme DESTINATION_NAME=shop node --import tsx examples/platform-api/query-destination.ts': {
    kind: 'test',
    file: 'examples/platform-api/platform-api.test.ts',
    proof: "import('./query-destination.js')",
  },
  'npx durable-worker check --handlers examples/search-index/handlers': HERE,
  'npx vitest run examples/search-index': { kind: 'test', file: 'examples/search-index/search-index.test.ts', proof: "describe('examples/search-index" },
  'npx vitest run examples/typescript-handlers': {
    kind: 'test',
    file: 'examples/typescript-handlers/handlers.test.ts',
    proof: "describe('examples/typescript-handlers",
  },
  ...Object.fromEntries(PYTHON_CLIENT_COMMANDS.map((command) => [command, HERE])),
  // The redrive path of the README tour and the operations guide: run below, in the order written.
  'npx durable-worker dead-letters list': HERE,
  'npx durable-worker dead-letters replay --dry-run': HERE,
  'npx durable-worker dead-letters replay': HERE,
  'npx durable-worker dead-letters list --state dead': HERE,
  'npx durable-worker dead-letters show entry-changes:3f2b6c1e-8f7a-4c1e-9d2a-6b1f0e4a7c55': HERE,
  'npx durable-worker dead-letters replay --handler entry-changes': HERE,
  'npx durable-worker dead-letters purge --older-than 30d --yes': HERE,
  // docs/console.md
  'npx durable-worker dev --demo --no-console': { kind: 'test', file: 'test/cli/dev.test.ts', proof: "'--no-console'" },
  'npx vitest run test/console/browser.test.ts': { kind: 'test', file: 'test/console/browser.test.ts', proof: "describe('the console in a browser" },
  // docs/kubernetes.md, the image: building needs the bases from Docker Hub; CI builds the same Dockerfile on local bases.
  'docker build -t durable-worker:0.1.0 .': { kind: 'test', file: '.ci/image.sh', proof: '--file Dockerfile' },
  'docker tag durable-worker:0.1.0 registry.example.com/team/durable-worker:0.1.0': {
    kind: 'manual',
    why: 'needs a registry; CI tags the image it builds locally (.ci/image.sh)',
  },
  'docker push registry.example.com/team/durable-worker:0.1.0': { kind: 'manual', why: 'needs a registry to push to' },
  'docker build -t registry.example.com/team/orders-worker:1.0.0 -f Dockerfile.worker .': {
    kind: 'test',
    file: 'test/image/container.test.ts',
    proof: "'Dockerfile.worker'",
  },
  // docs/contributing.md: the contributor's commands.
  'npm ci': { kind: 'test', file: '.ci/suite.sh', proof: 'npm ci --no-audit --no-fund' },
  'npx vitest run test/worker': { kind: 'manual', why: 'runs one folder of the suite that npm test runs whole' },
  'npm run lint': { kind: 'manual', why: 'npm test, which CI runs, runs it first' },
  'npm run format': { kind: 'manual', why: 'rewrites the working tree; npm run lint (in npm test) checks its result' },
  'npm run test:quick': {
    kind: 'manual',
    why: 'runs the files of the suite that start nothing, which npm test runs too; test/docs/quick-tests.test.ts checks the selection',
  },
  'npm run typecheck': { kind: 'manual', why: 'npm test, which CI runs, runs it after lint' },
  'eval "$(bash .ci/services.sh)"': { kind: 'test', file: '.ci/run', proof: 'eval "$(bash .ci/services.sh)"' },
  'npm run check:imports': { kind: 'test', file: 'test/docs/import-layers.test.ts', proof: "'check-imports.mjs'" },
  // docs/tracing.md, the walk-through: run in order, on free ports.
  'node examples/tracing/print-traces.mjs': {
    kind: 'test',
    file: 'test/docs/tracing-walkthrough.test.ts',
    proof: "expect(receiverCommand).toBe('node examples/tracing/print-traces.mjs')",
  },
  'OTEL_EXPORTER_OTLP_PROTOCOL=http/json npx durable-worker dev --otel --handlers examples/tracing/handlers': {
    kind: 'test',
    file: 'test/docs/tracing-walkthrough.test.ts',
    proof: 'npx durable-worker dev --otel',
  },
  [TRACING_CURL]: { kind: 'test', file: 'test/docs/tracing-walkthrough.test.ts', proof: 'curl -s -X POST http' },
};

const BIN = `node ${JSON.stringify(join(ROOT, 'bin', 'durable-worker.js'))}`;

interface Shell {
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/** Runs a documented command through sh, `npx durable-worker` being the repo's bin (what npx runs). */
function shell(command: string, env: Record<string, string> = {}): Shell {
  const env0: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('DURABLE_WORKER_')) env0[key] = value;
  const child = spawn('sh', ['-c', `exec ${command.replace(/^npx durable-worker/, BIN)}`], {
    cwd: ROOT,
    env: { ...env0, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: Shell = {
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.on('close', (code) => resolve(code))),
    kill: (signal) => {
      if (child.exitCode === null) child.kill(signal);
    },
    async waitFor(pattern, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = pattern.exec(out.stdout);
        if (match) return match;
        if (child.exitCode !== null || Date.now() > deadline)
          throw new Error(`${command}: no ${pattern} (exit ${child.exitCode})\nstdout: ${out.stdout.slice(-3000)}\nstderr: ${out.stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out.stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out.stderr += chunk));
  return out;
}

/**
 * PATH for the README's `curl | grep`: the machine's curl when installed; otherwise a stand-in that
 * does what `curl -s URL` does (GET, body to stdout), so a CI image without curl still runs the pipe.
 */
function curlPath(): Record<string, string> {
  const dirs = (process.env.PATH ?? '').split(':');
  if (dirs.some((d) => d !== '' && existsSync(join(d, 'curl')))) return {};
  const dir = mkdtempSync(join(tmpdir(), 'dw-curl-'));
  const script = join(dir, 'curl');
  writeFileSync(
    script,
    `#!${process.execPath}\nconst url = process.argv.at(-1);\nfetch(url).then(async (r) => process.stdout.write(await r.text()), () => process.exit(7));\n`,
    { mode: 0o755 },
  );
  return { PATH: `${dir}:${process.env.PATH ?? ''}` };
}

/** Polls `url` until `pattern` matches its body. */
async function pollText(url: string, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  let last = '';
  const found = async () => {
    last = await fetch(url).then(
      (r) => r.text(),
      () => '',
    );
    return pattern.test(last);
  };
  await waitFor(`${pattern} at ${url}`, found, timeoutMs, 200).catch(() => {
    throw new Error(`${url}: no ${pattern} in\n${last.slice(0, 2000)}`);
  });
  return last;
}

/**
 * Ports, stores and files of a documented `dev` command made safe for a test run (same command
 * otherwise): the default SQLite store, in a folder of the test's own.
 */
function safeDev(command: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dw-doc-dev-'));
  return `${command} --port 0 --metrics-port 0 --metrics-host 127.0.0.1 --console-port 0 --idempotency sqlite:${join(dir, 'idempotency.sqlite')} --dead-letter file:${join(dir, 'dead.jsonl')}`;
}

/** Runs a dev command until its handlers processed demo events, then SIGTERM: must exit 0. */
async function runDev(command: string, env: Record<string, string> = {}): Promise<{ metricsUrl: string; stdout: string; stop: () => Promise<number | null> }> {
  const dev = shell(safeDev(command), env);
  try {
    await dev.waitFor(/emulator listening on http:\/\/127\.0\.0\.1:\d+/);
    const [, metricsUrl] = await dev.waitFor(/metrics at (http:\/\/\S+\/metrics)/);
    await pollText(metricsUrl!, /durable_worker_runs_total\{[^}]*outcome="ok"[^}]*\} [1-9]/);
    return {
      metricsUrl: metricsUrl!,
      get stdout() {
        return dev.stdout;
      },
      stop: async () => {
        dev.kill('SIGTERM');
        return dev.exited;
      },
    };
  } catch (err) {
    dev.kill('SIGKILL');
    throw err;
  }
}

// The commands of examples/sync-to-postgres need PostgreSQL: outside CI without DATABASE_URL they
// are skipped, saying what to export; under CI they run (and fail without it).
const databaseUrl = process.env.DATABASE_URL;
const withoutDatabase = databaseUrl === undefined && !underCi();
const skipWithoutDatabase = (command: string) =>
  it.skip(`SKIPPED: ${command} needs DATABASE_URL (export DATABASE_URL=postgres://app:app@127.0.0.1:5432/app)`, () => {});

describe('every documented command is covered', () => {
  const documented = allDocCommands();

  it('has a coverage entry (run here, a test that runs it, or why it cannot run)', () => {
    const missing = documented.filter((c) => COVERAGE[c.command] === undefined).map((c) => `${c.file}: ${c.command}`);
    expect(missing, 'add these commands to COVERAGE in test/docs/commands.test.ts').toEqual([]);
    const stale = Object.keys(COVERAGE).filter((command) => !documented.some((c) => c.command === command));
    expect(stale, 'no documented command any more: remove from COVERAGE').toEqual([]);
  });

  it('maps to tests that exist and run the command', () => {
    for (const [command, coverage] of Object.entries(COVERAGE)) {
      if (coverage.kind !== 'test') continue;
      const path = join(ROOT, coverage.file);
      expect(existsSync(path), `${command} -> ${coverage.file}`).toBe(true);
      expect(readFileSync(path, 'utf8'), `${command} -> ${coverage.file}`).toContain(coverage.proof);
    }
  });

  it("`npx durable-worker` resolves to this package's bin", async () => {
    const npx = shell('npx --offline durable-worker --version');
    expect(await npx.exited, npx.stderr).toBe(0);
    expect(npx.stdout.trim()).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  });
});

describe('README tour', () => {
  it('dev --demo runs the default ./handlers; curl | grep shows the events counter; SIGTERM exits 0', async () => {
    const dev = await runDev('npx durable-worker dev --demo');
    try {
      expect(dev.stdout).toMatch(/entry product-\d+ (created|updated)/);
      const port = new URL(dev.metricsUrl).port;
      const curl = shell('curl -s http://127.0.0.1:9464/metrics | grep durable_worker_runs_total'.replace('9464', port), curlPath());
      expect(await curl.exited, curl.stderr).toBe(0);
      expect(curl.stdout).toMatch(/^durable_worker_runs_total\{type="source_entry.updated",outcome="ok"\} \d+$/m);
    } finally {
      expect(await dev.stop()).toBe(0);
    }
  });

  // `check --setup` of examples/sync-to-postgres runs its setup against PostgreSQL.
  const checkCommands = allDocCommands().filter((c) => c.command.startsWith('npx durable-worker check'));
  const checkSkipped = withoutDatabase ? checkCommands.filter((c) => c.command.includes('--setup') && c.command.includes('sync-to-postgres')) : [];
  for (const { command } of checkSkipped) skipWithoutDatabase(command);
  it.each(checkCommands.filter((c) => !checkSkipped.includes(c)))('$command prints the routing table and exits 0', async ({ command }) => {
    // `check --setup` of examples/sync-to-postgres creates its table: one of this test's own, dropped after.
    const table = `check_doc_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    const check = shell(command, { SYNC_TABLE: table });
    const code = await check.exited;
    if (command.includes('--setup') && databaseUrl !== undefined) {
      const pg = (await import('pg')).default;
      const db = new pg.Pool({ connectionString: databaseUrl, max: 1 });
      await db.query(`DROP TABLE IF EXISTS ${table}`).finally(() => db.end());
    }
    expect(code, check.stderr).toBe(0);
    if (command.includes('--setup')) expect(check.stdout).toMatch(/^setup ok: \S+$/m);
    expect(check.stdout).toMatch(/^handler\s+event types$/m);
    expect(check.stdout).toMatch(/\S+\s+source_entry\.updated$/m);
    expect(check.stdout).toMatch(/^ok: \d+ handler\(s\)$/m);
  });

  it('run --help shows examples', async () => {
    const help = shell('npx durable-worker run --help');
    expect(await help.exited).toBe(0);
    expect(help.stdout).toContain('Examples:');
    expect(help.stdout).toContain('--client-secret-file');
  });

  it('the real-platform run command works as written against a stand-in platform, never logging the secret', async () => {
    const emulator = await startEmulator({ port: 0, logger: pino({ level: 'silent' }) });
    const dir = mkdtempSync(join(tmpdir(), 'dw-doc-run-'));
    const secretFile = join(dir, 'client-secret');
    writeFileSync(secretFile, 'dev-secret\n');
    try {
      await fetch(`${emulator.url}/_emulator/tenants/dev-tenant/event-destinations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'my-consumer', type: 'DURABLE_CONSUMER' }),
      });
      const command = REAL_PLATFORM_RUN.replace('https://api.example.com', emulator.url)
        .replace('my-tenant', 'dev-tenant')
        .replace('/run/secrets/client-secret', secretFile)
        .concat(` --exit-when-idle --metrics-port 0 --metrics-host 127.0.0.1 --idempotency memory --dead-letter file:${join(dir, 'dead.jsonl')}`);
      const run = shell(command, { CLIENT_ID: 'dev-client' });
      expect(await run.exited, run.stderr).toBe(0);
      // One start-up line with the effective configuration (JSON: stdout is not a TTY), secret redacted.
      const startup = run.stdout.split('\n').filter((line) => line.includes('"msg":"starting durable-worker"'));
      expect(startup).toHaveLength(1);
      const config = (JSON.parse(startup[0]!) as { config: Record<string, unknown> }).config;
      expect(config).toMatchObject({
        baseUrl: emulator.url,
        tenant: 'dev-tenant',
        clientId: 'dev-client',
        destination: 'my-consumer',
        credential: 'client-credentials',
      });
      expect(run.stdout + run.stderr).not.toContain('dev-secret');
    } finally {
      await emulator.close();
    }
  });
});

describe('dead-letter redrive (README tour, operations guide)', () => {
  /** The record the documented `show` names: a demo event that ./handlers/entry-changes.js handles fine once "fixed". */
  const EVENT_ID = '3f2b6c1e-8f7a-4c1e-9d2a-6b1f0e4a7c55';

  /** Answers of each documented command, by subcommand, after the one record was seeded `dead`. */
  const expectations: Array<[RegExp, (out: string) => void]> = [
    [/ list( --state dead)?$/, (out) => expect(out).toMatch(new RegExp(`^entry-changes:${EVENT_ID}\\s+dead\\s+permanent\\s+source_entry\\.updated`, 'm'))],
    [/ show /, (out) => expect(JSON.parse(out)).toMatchObject({ id: `entry-changes:${EVENT_ID}`, state: 'dead', event: { id: EVENT_ID } })],
    [/ replay --dry-run$/, (out) => expect(out).toContain('1 record(s) would be replayed (--dry-run: nothing ran)')],
    [/ replay( --handler entry-changes)?$/, (out) => expect(out).toContain('1 of 1 record(s): 1 replayed')],
    [/ purge /, (out) => expect(out).toContain('nothing to purge')],
  ];

  it.each(['README.md', 'docs/operations.md'])(
    '%s: the dead-letters commands as written, in order, on a seeded sink',
    async (file) => {
      const dir = mkdtempSync(join(tmpdir(), 'dw-doc-dead-letters-'));
      const { openDeadLetterStore } = await import('../../src/dead-letter/index.js');
      const sink = await openDeadLetterStore(`file:${join(dir, 'dead-letter.jsonl')}`, { prefix: 'dev-tenant:dev-consumer' });
      const entry = { id: 'product-1', sourceId: 'demo-products', properties: [{ id: 'name', value: 'Kettle' }] };
      await sink.write({
        event: {
          specversion: '1.0',
          id: EVENT_ID,
          type: 'source_entry.updated',
          subject: 'product-1',
          sequence: '42',
          data: { sourceId: 'demo-products', entryId: 'product-1', previous: null, current: entry },
        },
        handler: 'entry-changes',
        reason: 'permanent',
        error: { message: 'price must be positive', code: 'DW_ERR_PERMANENT' },
        attempt: 1,
        generation: 1,
        workerId: 'host-0',
        leaseId: 'lease-1',
        deadLetteredAt: new Date().toISOString(),
      });
      await sink.close();
      const commands = commandsOf(file).filter((c) => c.command.startsWith('npx durable-worker dead-letters'));
      expect(commands.length).toBeGreaterThanOrEqual(3);
      let replayed = false;
      for (const { command } of commands) {
        // As written, on this test's sink and store instead of ./.durable-worker.
        const run = shell(`${command} --dead-letter file:${join(dir, 'dead-letter.jsonl')} --idempotency sqlite:${join(dir, 'idempotency.sqlite')}`);
        expect(await run.exited, `${command}\n${run.stdout}\n${run.stderr}`).toBe(0);
        const [, check] = expectations.find(([pattern]) => pattern.test(command)) ?? [];
        expect(check, `no expectation for ${command}`).toBeDefined();
        // Once replayed, a listing shows the record replayed (and a list of dead ones shows nothing).
        if (replayed && / list/.test(command)) expect(run.stdout).not.toMatch(/\sdead\s/);
        else check!(run.stdout);
        if (/ replay( --handler entry-changes)?$/.test(command)) replayed = true;
      }
      expect(replayed).toBe(true);
    },
    120_000,
  );
});

describe('examples READMEs', () => {
  it('forward-to-webhook: dev --demo --forward-url delivers demo events to the app', async () => {
    const { startApp } = await import('../../examples/forward-to-webhook/app.js');
    const app = await startApp();
    try {
      const dev = await runDev('npx durable-worker dev --demo --forward-url http://127.0.0.1:3000/events'.replace('http://127.0.0.1:3000', app.url));
      expect(await dev.stop()).toBe(0);
      expect(app.received.length).toBeGreaterThan(0);
      expect(app.received[0]).toMatchObject({ type: 'source_entry.updated', subject: expect.stringMatching(/^product-/) });
    } finally {
      await app.close();
    }
  });

  const syncCommand = 'npx durable-worker dev --demo --handlers examples/sync-to-postgres/handlers';
  if (withoutDatabase) skipWithoutDatabase(syncCommand);
  else {
    it('sync-to-postgres: dev --demo fills the table', async () => {
      expect(databaseUrl, 'DATABASE_URL must be set in CI').toBeDefined();
      const table = `sync_doc_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
      const pg = (await import('pg')).default;
      const db = new pg.Pool({ connectionString: databaseUrl, max: 1 });
      try {
        const dev = await runDev(syncCommand, { DATABASE_URL: databaseUrl!, SYNC_TABLE: table });
        expect(await dev.stop()).toBe(0);
        const { rows } = await db.query<{ entry_id: string }>(`SELECT entry_id FROM ${table}`);
        expect(rows.length).toBeGreaterThan(0);
        expect(rows[0]!.entry_id).toMatch(/^product-/);
      } finally {
        await db.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
        await db.end();
      }
    });
  }
});

describe('docs/client.md', () => {
  it(
    'generates a Python client from docs/openapi/platform-api.json that ingests, pulls and acknowledges against the emulator',
    { timeout: 300_000 },
    async () => {
      const documented = commandsOf('docs/client.md').map((c) => c.command);
      for (const command of PYTHON_CLIENT_COMMANDS) expect(documented).toContain(command);
      // A scratch folder with the repository's docs/ in it (pip's own cache makes later runs quick).
      const dir = mkdtempSync(join(tmpdir(), 'dw-python-client-'));
      symlinkSync(join(ROOT, 'docs'), join(dir, 'docs'));
      const generate = spawn('sh', ['-c', `set -e\n${PYTHON_CLIENT_COMMANDS.join('\n')}`], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      generate.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      generate.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const [code] = (await once(generate, 'close')) as [number | null];
      expect(code, output).toBe(0);
      // The generator ran from the new virtual environment, not from a Python installed elsewhere.
      expect(existsSync(join(dir, '.venv', 'bin', 'openapi-python-client')), output).toBe(true);
      expect(existsSync(join(dir, 'platform_api_client', 'api', 'durable_consumers', 'pull_batch.py')), output).toBe(true);

      const emulator = await startEmulator({ port: 0, logger: pino({ level: 'silent' }) });
      try {
        const script = /^```python\n([\s\S]*?)^```/m.exec(readFileSync(join(ROOT, 'docs', 'client.md'), 'utf8'))![1]!;
        writeFileSync(join(dir, 'demo.py'), script.replace('http://127.0.0.1:8787', emulator.url));
        const demo = spawn(join(dir, '.venv', 'bin', 'python'), ['demo.py'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
        let printed = '';
        demo.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
        demo.stderr.on('data', (chunk: Buffer) => (printed += chunk.toString()));
        const [exit] = (await once(demo, 'close')) as [number | null];
        expect(exit, printed).toBe(0);
        expect(printed.trim().split('\n')).toEqual(['accepted 1 entry', 'pulled source_entry.updated kettle 25.5', 'acknowledged committed committed 1']);
      } finally {
        await emulator.close();
      }
    },
  );
});

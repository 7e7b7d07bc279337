import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { underCi } from '../fixtures/ci.js';
import { capturingLogger, createConsumer, emulatorForFile, FAST, tempDir, waitFor, workerConfig } from './harness.js';

const GATED = fileURLToPath(new URL('../fixtures/life-cycle-gated', import.meta.url));
const PG_POOL = fileURLToPath(new URL('../fixtures/life-cycle-pg', import.meta.url));

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
const readyz = (worker: RunningWorker) => fetch(`${worker.metricsUrl}/readyz`).then((r) => r.status);

const file = emulatorForFile();
const opened: RunningWorker[] = [];
afterEach(async () => {
  for (const worker of opened.splice(0)) await worker.close();
});

async function ingest(ids: string[]): Promise<void> {
  const client = createClient({ baseUrl: file.emulator.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
  try {
    await client.ingest('life-cycle', { entries: ids.map((id) => ({ id, properties: [{ id: 'name', value: id }] })) });
  } finally {
    await client.close();
  }
}

describe.each(['none', 'thread'] as const)('handler life cycle (--isolation %s)', (isolation) => {
  it('a setup that fails keeps /readyz at 503 and nothing is pulled; it is logged naming the handler and retried until it succeeds', async () => {
    const dir = tempDir('setup-gate');
    process.env.SETUP_GATE = join(dir, 'open');
    process.env.LIFE_LOG = join(dir, 'life.log');
    const destination = await createConsumer(file.emulator, 'setup-gate');
    const { logger, lines: logged } = capturingLogger('info');
    const worker = await startWorker(workerConfig(file.emulator, destination, dir, { handlersDir: GATED, isolation }), { logger, timings: FAST });
    opened.push(worker);
    await ingest(['gated-1']);

    const failure = await waitFor('a setup failure logged', () =>
      logged().find((l) => l.handler === 'gated' && String(l.msg).startsWith('setup of handler gated failed: gate closed')),
    );
    expect(failure).toMatchObject({ level: 50, attempt: 1 });
    const probe = await fetch(`${worker.metricsUrl}/readyz`);
    // The probe names the handler, not its error (an error message could carry a secret).
    expect([probe.status, await probe.text()]).toEqual([503, 'not ready: setup of handler gated failed (retried; the error is in the log)\n']);
    expect(worker.ready).toBe(false);
    expect(
      file.emulator
        .state()
        .tenants.find((t) => t.id === 'dev-tenant')
        ?.consumers.find((c) => c.id === destination)?.leased,
    ).toBe(0);

    writeFileSync(process.env.SETUP_GATE, 'open');
    await waitFor('/readyz 200 once setup succeeded', async () => (await readyz(worker)) === 200, 15_000);
    await waitFor('the event handled', () => lines(process.env.LIFE_LOG as string).length === 1);
    // ctx.resources is what setup returned, in the thread that runs the event.
    const [, subject, thread, openedBy] = lines(process.env.LIFE_LOG as string)[0]!.split(' ');
    expect(subject).toBe('gated-1');
    expect(openedBy).toBe(thread);
  });

  // A real PostgreSQL pool (CI provides DATABASE_URL; locally the test says how to run it).
  it.skipIf(process.env.DATABASE_URL === undefined && !underCi())(
    'teardown runs once per thread at drain, after the last event, and closes the pool opened in setup',
    async () => {
      if (process.env.DATABASE_URL === undefined)
        throw new Error('DATABASE_URL is not set under CI: export DATABASE_URL=postgres://app:app@127.0.0.1:5432/app');
      const dir = tempDir('setup-pg');
      process.env.LIFE_LOG = join(dir, 'life.log');
      const destination = await createConsumer(file.emulator, 'setup-pg');
      const { logger, messages } = capturingLogger('info');
      const worker = await startWorker(workerConfig(file.emulator, destination, dir, { handlersDir: PG_POOL, isolation }), { logger, timings: FAST });
      await waitFor('ready', () => worker.ready, 20_000).catch((err: Error) => {
        throw new Error(`${err.message}: ${messages().join(' | ')}`);
      });
      let done = 0;
      worker.events.on('run:done', (e) => void (e.outcome === 'ok' && done++));
      await ingest(['pg-1', 'pg-2', 'pg-3']);
      await waitFor('three events ok', () => done === 3);
      await worker.close();

      const log = lines(process.env.LIFE_LOG as string);
      const setUp = log.filter((l) => l.startsWith('setup ')).map((l) => l.split(' ')[1]);
      const tornDown = log.filter((l) => l.startsWith('teardown '));
      expect(setUp.length).toBeGreaterThan(0);
      if (isolation === 'none') expect(setUp).toEqual(['0']);
      else expect(new Set(setUp).size).toBe(setUp.length);
      // Once per thread that set up, with its pool ended and no client left.
      expect(tornDown.map((l) => l.split(' ')[1]).sort()).toEqual([...setUp].sort());
      for (const line of tornDown) expect(line).toMatch(/ ended=true clients=0$/);
    },
  );
});

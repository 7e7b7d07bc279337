import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { underCi } from '../fixtures/ci.js';
import { waitFor } from '../fixtures/wait-for.js';
import { createConsumer, tempDir } from '../worker/harness.js';
import { CliProcess, waitReady } from './cli-process.js';

const PG_POOL = fileURLToPath(new URL('../fixtures/life-cycle-pg', import.meta.url));
const ACTIVE_AT_EXIT = fileURLToPath(new URL('../fixtures/active-at-exit.cjs', import.meta.url));
const DATABASE_URL = process.env.DATABASE_URL;

// `run` as a real process: SIGTERM drains, tears each handler down once per thread (closing the
// PostgreSQL pool its setup opened) and the process exits 0 on its own, nothing left open.
describe.skipIf(DATABASE_URL === undefined && !underCi())('durable-worker run: handler life cycle at SIGTERM', () => {
  let emulator: RunningEmulator;
  beforeAll(async () => {
    if (DATABASE_URL === undefined) throw new Error('DATABASE_URL is not set under CI: export DATABASE_URL=postgres://app:app@127.0.0.1:5432/app');
    emulator = await startEmulator({ port: 0, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await emulator?.close();
  });

  it.each(['thread', 'none'] as const)('--isolation %s: teardown once per thread that set up, the pool closed, no open handle at exit', async (isolation) => {
    const dir = tempDir('life-cycle-cli');
    const lifeLog = join(dir, 'life.log');
    const destination = await createConsumer(emulator, 'life-cycle-cli');
    const child = new CliProcess(
      [
        'run',
        ...['--base-url', emulator.url, '--tenant', 'dev-tenant', '--client-id', 'dev-client', '--client-secret', 'dev-secret', '--destination', destination],
        ...['--handlers', PG_POOL, '--isolation', isolation, '--idempotency', 'memory', '--dead-letter', `file:${join(dir, 'dead.jsonl')}`],
        ...['--metrics-port', '0', '--metrics-host', '127.0.0.1', '--shutdown-timeout', '10'],
      ],
      { env: { LIFE_LOG: lifeLog, DATABASE_URL: DATABASE_URL as string, NODE_OPTIONS: `--require ${ACTIVE_AT_EXIT}` } },
    );
    try {
      await waitReady(child);
      const client = createClient({ baseUrl: emulator.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
      await client.ingest('life-cycle-cli', {
        entries: [
          { id: 'c-1', properties: [] },
          { id: 'c-2', properties: [] },
        ],
      });
      await client.close();
      await waitFor('both events committed', () => {
        const consumer = emulator
          .state()
          .tenants.find((t) => t.id === 'dev-tenant')
          ?.consumers.find((c) => c.id === destination);
        return consumer !== undefined && consumer.head !== null && consumer.committed === consumer.head;
      });
    } finally {
      child.kill('SIGTERM');
    }
    const result = await child.exited;
    expect(result.code, result.stderr).toBe(0);
    const log = existsSync(lifeLog) ? readFileSync(lifeLog, 'utf8').split('\n').filter(Boolean) : [];
    const setUp = log.filter((l) => l.startsWith('setup ')).map((l) => l.split(' ')[1]);
    const tornDown = log.filter((l) => l.startsWith('teardown '));
    expect(setUp.length).toBeGreaterThan(0);
    expect(tornDown.map((l) => l.split(' ')[1]).sort()).toEqual([...setUp].sort());
    for (const line of tornDown) expect(line).toMatch(/ ended=true clients=0$/);
    // It exited because nothing held it (not by the CLI's forced exit after its grace): at exit only
    // its stdio pipes to this test are left (a pool left open would show a TCP socket, a timer...).
    const active = /active resources at exit: (\[.*\])/.exec(result.stderr)?.[1];
    expect(active, result.stderr).toBeDefined();
    expect((JSON.parse(active as string) as string[]).filter((kind) => kind !== 'PipeWrap')).toEqual([]);
  });
});

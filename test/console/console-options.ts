import { join } from 'node:path';
import pino from 'pino';
import type { DevConsole } from '../../src/console/index.js';
import { tempDir } from '../worker/harness.js';

export type ConsoleStartOptions = Parameters<DevConsole['start']>[0];

/** A console of `dev` on a random loopback port, for the emulator at `emulatorUrl`, with the dev credentials and the console's test handlers. */
export function consoleOptions(emulatorUrl: string, deadLetterUrl: string, overrides: Partial<ConsoleStartOptions> = {}): ConsoleStartOptions {
  return {
    host: '127.0.0.1',
    port: 0,
    portIsDefault: false,
    emulatorUrl,
    tenant: 'dev-tenant',
    clientId: 'dev-client',
    clientSecret: 'dev-secret',
    destination: 'dev-consumer',
    deadLetterUrl,
    idempotencyPrefix: 'dev-tenant:dev-consumer',
    cwd: tempDir('console-cwd'),
    replay: { handlersDir: join(import.meta.dirname, '../fixtures/console-handlers'), idempotencyUrl: 'memory' },
    logger: pino({ level: 'silent' }),
    ...overrides,
  };
}

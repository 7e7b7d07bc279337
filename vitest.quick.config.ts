import { readdirSync, readFileSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

/**
 * `npm run test:quick`: the unit tests, for an edit-test loop (docs/contributing.md). A test file is
 * one when it starts nothing: no emulator or worker, no process, no server, no Redis or PostgreSQL,
 * no built dist/. What a file imports or calls decides, so a new test joins or leaves by itself.
 */
const STARTS_SOMETHING =
  /startEmulator|emulatorForFile|withEmulator|startWorker|harness|child_process|spawn|runCli|fork\(|REDIS_URL|DATABASE_URL|PGBOUNCER_URL|dist\/|helm|promtool|chromium|bench\/|fetch\(/;

const quick = readdirSync('test', { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.test.ts'))
  .map((file) => `test/${file}`)
  .filter((file) => !STARTS_SOMETHING.test(readFileSync(file, 'utf8')))
  .sort();

export default defineConfig({
  test: {
    include: quick,
    setupFiles: ['test/setup/emulator-responses.ts'],
    testTimeout: 10_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});

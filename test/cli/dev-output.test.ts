/**
 * One format per destination: piped, every line `dev --demo` writes on stdout is one JSON object,
 * the banner (console address, curl commands) included, and a handler's `console.*` lines are
 * records of the run that made them (the handler's name, the event id), in both isolation modes.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CliProcess, REPO_ROOT } from './cli-process.js';

const PACKAGE_ENTRY = pathToFileURL(join(REPO_ROOT, 'dist', 'index.js')).href;

describe.each(['thread', 'none'] as const)('dev --demo piped, --isolation %s', (isolation) => {
  it("writes only JSON lines on stdout; handlers' console lines are records of their runs", async () => {
    const dir = mkdtempSync(join(tmpdir(), `dw-dev-json-${isolation}-`));
    mkdirSync(join(dir, 'handlers'));
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    writeFileSync(
      join(dir, 'handlers', 'noisy.js'),
      `import { defineHandler } from ${JSON.stringify(PACKAGE_ENTRY)};
console.log('noisy loaded');
export default defineHandler({
  type: 'source_entry.updated',
  async handle(event) {
    console.log('saw %s', event.subject, { multi: 'line\\nvalue' });
    console.error(new Error('not really'));
  },
});
`,
    );
    const cli = new CliProcess(
      ['dev', '--demo', '--port', '0', '--console-port', '0', '--metrics-port', '0', '--metrics-host', '127.0.0.1', '--isolation', isolation],
      { cwd: dir },
    );
    try {
      await cli.waitForOutput(/"msg":"saw product-\d+/, 60_000);
      await cli.waitForOutput(/"msg":"not really"/, 10_000);
      cli.kill('SIGTERM');
      const { code, stdout } = await cli.exited;
      expect(code).toBe(0);
      const records = stdout
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => {
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {
            throw new Error(`not a JSON line: ${line}`);
          }
        });
      // The banner, as records.
      expect(records.find((r) => String(r.msg).startsWith('Open the console: http://127.0.0.1:'))).toBeDefined();
      const curl = records.find((r) => r.msg === 'Get a token and ingest by hand:');
      expect((curl?.lines as string[])[0]).toMatch(/^TOKEN=\$\(curl /);
      // The handler's console lines: with its name and the event's id; an error in full.
      const saw = records.find((r) => typeof r.msg === 'string' && r.msg.startsWith('saw product-'));
      expect(saw).toMatchObject({ level: 30, handler: 'noisy', console: 'log', eventId: expect.any(String) });
      expect(saw?.msg).toContain("multi: 'line\\nvalue'");
      const error = records.find((r) => r.msg === 'not really');
      expect(error).toMatchObject({
        level: 50,
        handler: 'noisy',
        console: 'error',
        err: { type: 'Error', message: 'not really', stack: expect.stringContaining('noisy.js') },
      });
      // Outside a run (the module's top level), a record of the handlers.
      expect(records.find((r) => r.msg === 'noisy loaded')).toMatchObject({ component: 'handlers', console: 'log' });
    } finally {
      cli.kill('SIGKILL');
    }
  }, 90_000);
});

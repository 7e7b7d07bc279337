/**
 * `dev` reloads its handlers on a save (the handlers folder is watched by default): the saved
 * version runs against the same emulator and console, nothing is lost or run twice by the reload,
 * and a save that does not load leaves the running version in place and says why.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { waitFor as waitForValue } from '../fixtures/wait-for.js';
import { CliProcess, REPO_ROOT } from './cli-process.js';

const PACKAGE_ENTRY = pathToFileURL(join(REPO_ROOT, 'dist', 'index.js')).href;

/** A handler that appends `<version> <entry id>` to $DW_TEST_MARKERS; its version comes from `_lib/`. */
function handlerSource(versionImport: string, delayMs = 0): string {
  return `import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineHandler } from ${JSON.stringify(PACKAGE_ENTRY)};
${versionImport}
export default defineHandler({
  type: 'source_entry.updated',
  async handle(event) {
    await sleep(${delayMs});
    appendFileSync(process.env.DW_TEST_MARKERS, VERSION + ' ' + event.subject + '\\n');
  },
});
`;
}

const markers = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

interface ConsumerState {
  head: string | null;
  committed: string | null;
}

async function consumerState(emulatorUrl: string): Promise<ConsumerState> {
  const state = (await (await fetch(`${emulatorUrl}/_emulator/state`)).json()) as {
    tenants: Array<{ id: string; consumers: Array<ConsumerState & { id: string }> }>;
  };
  const consumer = state.tenants.find((t) => t.id === 'dev-tenant')?.consumers.find((c) => c.id === 'dev-consumer');
  if (consumer === undefined) throw new Error('no dev-consumer in the emulator state');
  return consumer;
}

const getJson = async <T>(url: string): Promise<T> => (await (await fetch(url)).json()) as T;

describe.each(['thread', 'none'] as const)('dev --isolation %s: a save reloads the handlers', (isolation) => {
  it('runs the saved version against the same emulator and console; a broken save keeps the running one', async () => {
    const dir = mkdtempSync(join(tmpdir(), `dw-dev-reload-${isolation}-`));
    const handlers = join(dir, 'handlers');
    mkdirSync(join(handlers, '_lib'), { recursive: true });
    // A project as `init` writes it: ES modules.
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    const libFile = join(handlers, '_lib', 'version.js');
    const handlerFile = join(handlers, 'marker.js');
    const markerFile = join(dir, 'markers.txt');
    writeFileSync(libFile, "export const VERSION = 'v1';\n");
    writeFileSync(handlerFile, handlerSource("import { VERSION } from './_lib/version.js';", 20));

    const cli = new CliProcess(
      [
        'dev',
        '--port',
        '0',
        '--console-port',
        '0',
        '--metrics-port',
        '0',
        '--metrics-host',
        '127.0.0.1',
        '--handlers',
        handlers,
        '--isolation',
        isolation,
        '--dead-letter',
        `file:${join(dir, 'dead.jsonl')}`,
      ],
      { cwd: dir, env: { DW_TEST_MARKERS: markerFile } },
    );
    const client = { current: undefined as ReturnType<typeof createClient> | undefined };
    // On a timeout, what the process said.
    const waitFor = <T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs: number) =>
      waitForValue(what, probe, timeoutMs).catch((err: Error) => {
        throw new Error(`${err.message}\nstdout:\n${cli.stdout.slice(-6_000)}\nstderr:\n${cli.stderr.slice(-2_000)}`);
      });
    try {
      const [, emulatorUrl] = await cli.waitForOutput(/emulator listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
      const [, consoleUrl] = await cli.waitForOutput(/Open the console: (http:\/\/127\.0\.0\.1:\d+) /);
      await cli.waitForOutput(/"msg":"worker started"/, 60_000);
      const api = createClient({ baseUrl: emulatorUrl!, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
      client.current = api;
      const ingest = (ids: string[]) => api.ingest('reload-test', { entries: ids.map((id) => ({ id, properties: [{ id: 'name', value: id }] })) });

      // Version 1 handles the first events.
      await ingest(['a1', 'a2']);
      await waitFor('version 1 to handle a1 and a2', () => markers(markerFile).length === 2, 30_000);
      expect(markers(markerFile).sort()).toEqual(['v1 a1', 'v1 a2']);
      await waitFor('the commit of a2', async () => (await consumerState(emulatorUrl!)).committed === (await consumerState(emulatorUrl!)).head, 20_000);
      const before = await consumerState(emulatorUrl!);
      await waitFor('the console to list a1 and a2', async () => (await getJson<Array<{ subject: string }>>(`${consoleUrl}/api/events`)).length === 2, 10_000);

      // Version 2, by saving the imported `_lib/` file, while events are arriving and running.
      const during = Array.from({ length: 12 }, (_, i) => `b${i + 1}`);
      const ingesting = ingest(during);
      writeFileSync(libFile, "export const VERSION = 'v2';\n");
      await ingesting;
      await waitFor('the reload to version 2', async () => (await getJson<{ state: string } | null>(`${consoleUrl}/api/reload`))?.state === 'loaded', 30_000);
      await ingest(['c1']);
      await waitFor('version 2 to handle c1', () => markers(markerFile).includes('v2 c1'), 30_000);
      await waitFor('every event of the reload handled', () => during.every((id) => markers(markerFile).some((m) => m.endsWith(` ${id}`))), 30_000);
      // Each event ran exactly once, whichever version ran it.
      const subjects = markers(markerFile).map((m) => m.split(' ')[1]);
      expect(subjects.sort()).toEqual(['a1', 'a2', ...during, 'c1'].sort());
      expect(cli.stdout).toMatch(/reloaded 1 handler\(s\) in \d+ ms/);

      // The same emulator (its position went on from where it was) and the same console (its events kept).
      const after = await consumerState(emulatorUrl!);
      expect(BigInt(after.head ?? '0')).toBeGreaterThan(BigInt(before.head ?? '0'));
      await waitFor(
        'the commit of c1',
        async () => {
          const state = await consumerState(emulatorUrl!);
          return state.committed !== null && state.committed === state.head;
        },
        20_000,
      );
      const listed = await waitFor(
        'the console to list every event',
        async () => {
          const events = await getJson<Array<{ subject: string }>>(`${consoleUrl}/api/events`);
          return events.length === 15 ? events : false;
        },
        10_000,
      );
      expect(listed.map((e) => e.subject)).toEqual(expect.arrayContaining(['a1', 'a2', 'c1']));

      // A save that does not load: version 2 keeps running, the terminal and the console say why.
      writeFileSync(handlerFile, handlerSource("import { VERSION } from './_lib/version.js';\nconst broken = ;"));
      const failed = await waitFor(
        'the failed reload',
        async () => {
          const reload = await getJson<{ state: string; message: string; error: string } | null>(`${consoleUrl}/api/reload`);
          return reload?.state === 'failed' ? reload : false;
        },
        30_000,
      );
      expect(failed.error).toContain('marker.js');
      expect(failed.message).toContain('the previous handlers keep running');
      expect(cli.stdout).toMatch(/handlers not reloaded: [^\n]*marker\.js/);
      await ingest(['d1']);
      await waitFor('version 2 to handle d1', () => markers(markerFile).includes('v2 d1'), 30_000);

      // The fix loads version 3.
      writeFileSync(handlerFile, handlerSource("const VERSION = 'v3';"));
      await waitFor('the reload to version 3', async () => (await getJson<{ state: string } | null>(`${consoleUrl}/api/reload`))?.state === 'loaded', 30_000);
      await ingest(['e1']);
      await waitFor('version 3 to handle e1', () => markers(markerFile).includes('v3 e1'), 30_000);
      expect(markers(markerFile).filter((m) => m.endsWith(' d1') || m.endsWith(' e1'))).toEqual(['v2 d1', 'v3 e1']);

      cli.kill('SIGTERM');
      const result = await cli.exited;
      expect(result.code, result.stderr).toBe(0);
    } finally {
      await client.current?.close();
      cli.kill('SIGKILL');
    }
  }, 120_000);
});

describe('dev --no-watch', () => {
  it('does not watch the handlers folder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-dev-no-watch-'));
    const handlers = join(dir, 'handlers');
    mkdirSync(handlers);
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    writeFileSync(join(handlers, 'marker.js'), handlerSource("const VERSION = 'v1';"));
    const cli = new CliProcess(
      ['dev', '--port', '0', '--no-console', '--metrics-port', '0', '--metrics-host', '127.0.0.1', '--handlers', handlers, '--isolation', 'none', '--no-watch'],
      { cwd: dir },
    );
    try {
      await cli.waitForOutput(/"msg":"worker started"/, 60_000);
      expect(cli.stdout).not.toContain('a saved change reloads the handlers');
      cli.kill('SIGTERM');
      expect((await cli.exited).code).toBe(0);
    } finally {
      cli.kill('SIGKILL');
    }
  });
});

/**
 * `dev` reloads after every kind of save an editor, a tool or git makes: in place, a temporary
 * file renamed over the handler (safe write, `sed -i`), delete then create (`git checkout`), a new
 * file, a deleted file, a file under `_lib/`, a renamed folder, a burst of saves (switching
 * branches). One dev process goes through them in turn, so each kind also proves the watch
 * survived the ones before it. After each, the saved version runs; over all of them, every event
 * ran exactly once and the emulator kept its state.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { waitFor as waitForValue } from '../fixtures/wait-for.js';
import { CliProcess, REPO_ROOT } from './cli-process.js';

const PACKAGE_ENTRY = pathToFileURL(join(REPO_ROOT, 'dist', 'index.js')).href;

/** A handler that appends `<name> <edit>/<lib version>@<its folder> <subject>` to $DW_TEST_MARKERS. */
function handlerSource(name: string, edit: string): string {
  return `import { appendFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineHandler } from ${JSON.stringify(PACKAGE_ENTRY)};
import { VERSION } from '../_lib/version.js';
const FOLDER = basename(dirname(fileURLToPath(import.meta.url)));
export default defineHandler({
  type: 'source_entry.updated',
  async handle(event) {
    appendFileSync(process.env.DW_TEST_MARKERS, ${JSON.stringify(name)} + ' ${edit}/' + VERSION + '@' + FOLDER + ' ' + event.subject + '\\n');
  },
});
`;
}
const libSource = (version: string) => `export const VERSION = '${version}';\n`;

/** An editor's safe write: a temporary file beside it, renamed over it. */
function renameOver(file: string, text: string): void {
  writeFileSync(`${file}___jb_tmp___`, text);
  renameSync(`${file}___jb_tmp___`, file);
}

const dir = mkdtempSync(join(tmpdir(), 'dw-dev-saves-'));
const handlers = join(dir, 'handlers');
const markerFile = join(dir, 'markers.txt');
let folder = join(handlers, 'orders');
const handlerFile = () => join(folder, 'marker.js');
const extraFile = () => join(folder, 'extra.js');
const libFile = join(handlers, '_lib', 'version.js');

const lines = (): string[] => (existsSync(markerFile) ? readFileSync(markerFile, 'utf8').split('\n').filter(Boolean) : []);
/** What `name` wrote for each subject: subject -> labels. */
function runs(name: string): Map<string, string[]> {
  const bySubject = new Map<string, string[]>();
  for (const line of lines()) {
    const [who, label, subject] = line.split(' ');
    if (who !== name || subject === undefined || label === undefined) continue;
    bySubject.set(subject, [...(bySubject.get(subject) ?? []), label]);
  }
  return bySubject;
}

let cli: CliProcess;
let api: ReturnType<typeof createClient>;
let emulatorUrl: string;
let sent: string[] = [];
let probes = 0;

const waitFor = <T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs: number) =>
  waitForValue(what, probe, timeoutMs).catch((err: Error) => {
    throw new Error(`${err.message}\nmarkers:\n${lines().slice(-20).join('\n')}\nstdout:\n${cli.stdout.slice(-6_000)}\nstderr:\n${cli.stderr.slice(-2_000)}`);
  });

async function ingest(ids: string[]): Promise<void> {
  sent.push(...ids);
  await api.ingest('saves-test', { entries: ids.map((id) => ({ id, properties: [{ id: 'name', value: id }] })) });
}

/** Sends probe events until one is handled by `label` (a reload takes a moment after the save). */
async function expectRunning(label: string): Promise<string> {
  return waitFor(
    `the marker handler to run as ${label}`,
    async () => {
      const id = `p${++probes}`;
      await ingest([id]);
      const labels = await waitFor(`probe ${id} to be handled`, () => runs('marker').get(id), 20_000);
      return labels.includes(label) ? id : false;
    },
    45_000,
  );
}

/** Saves with `save` while events arrive, then expects `label` to run. */
async function saveWhileBusy(kind: string, save: () => void, label: string): Promise<string> {
  const during = Array.from({ length: 4 }, (_, i) => `${kind}${i}`);
  const ingesting = ingest(during);
  save();
  await ingesting;
  return expectRunning(label);
}

/** The dev consumer's position in the emulator, once every event sent is acknowledged. */
async function settled(): Promise<{ head: string; committed: string }> {
  return waitFor(
    'every event acknowledged',
    async () => {
      const state = (await (await fetch(`${emulatorUrl}/_emulator/state`)).json()) as {
        tenants: Array<{ id: string; consumers: Array<{ id: string; head: string | null; committed: string | null }> }>;
      };
      const consumer = state.tenants.find((t) => t.id === 'dev-tenant')?.consumers.find((c) => c.id === 'dev-consumer');
      return consumer?.head != null && consumer.committed === consumer.head ? { head: consumer.head, committed: consumer.committed } : false;
    },
    30_000,
  );
}
let firstPosition: { head: string; committed: string };

describe('dev: every kind of save reloads the handlers', () => {
  beforeAll(async () => {
    mkdirSync(join(handlers, '_lib'), { recursive: true });
    mkdirSync(folder);
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    writeFileSync(libFile, libSource('l1'));
    writeFileSync(handlerFile(), handlerSource('marker', 'e1'));
    cli = new CliProcess(
      [
        'dev',
        '--port',
        '0',
        '--no-console',
        '--metrics-port',
        '0',
        '--metrics-host',
        '127.0.0.1',
        '--handlers',
        handlers,
        '--dead-letter',
        `file:${join(dir, 'dead.jsonl')}`,
      ],
      {
        cwd: dir,
        env: { DW_TEST_MARKERS: markerFile },
      },
    );
    [, emulatorUrl] = (await cli.waitForOutput(/emulator listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000)) as [string, string];
    await cli.waitForOutput(/a saved change reloads the handlers/, 60_000);
    api = createClient({ baseUrl: emulatorUrl, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
    await expectRunning('e1/l1@orders');
    firstPosition = await settled();
  }, 90_000);

  afterAll(async () => {
    await api?.close();
    cli?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('in place', async () => {
    await saveWhileBusy('inplace', () => writeFileSync(handlerFile(), handlerSource('marker', 'e2')), 'e2/l1@orders');
  }, 60_000);

  it('a temporary file renamed over it, twice (the second save is the one that used to be lost)', async () => {
    await saveWhileBusy('renameA', () => renameOver(handlerFile(), handlerSource('marker', 'e3')), 'e3/l1@orders');
    await saveWhileBusy('renameB', () => renameOver(handlerFile(), handlerSource('marker', 'e4')), 'e4/l1@orders');
    await saveWhileBusy('inplaceAfter', () => writeFileSync(handlerFile(), handlerSource('marker', 'e5')), 'e5/l1@orders');
  }, 120_000);

  it('deleted then created (git checkout), twice', async () => {
    for (const edit of ['e6', 'e7']) {
      await saveWhileBusy(
        `recreate${edit}`,
        () => {
          unlinkSync(handlerFile());
          writeFileSync(handlerFile(), handlerSource('marker', edit));
        },
        `${edit}/l1@orders`,
      );
    }
  }, 120_000);

  it('a file under _lib/, in place and renamed over', async () => {
    await saveWhileBusy('libA', () => writeFileSync(libFile, libSource('l2')), 'e7/l2@orders');
    await saveWhileBusy('libB', () => renameOver(libFile, libSource('l3')), 'e7/l3@orders');
  }, 120_000);

  it('a new file, then that file deleted', async () => {
    writeFileSync(extraFile(), handlerSource('extra', 'x1'));
    const probe = await waitFor(
      'the new handler to run',
      async () => {
        const id = await expectRunning('e7/l3@orders');
        return runs('extra').has(id) ? id : false;
      },
      45_000,
    );
    expect(runs('extra').get(probe)).toEqual(['x1/l3@orders']);

    unlinkSync(extraFile());
    await waitFor(
      'a reload without the deleted handler',
      async () => {
        const id = await expectRunning('e7/l3@orders');
        await settled();
        return !runs('extra').has(id);
      },
      45_000,
    );
  }, 120_000);

  it('a renamed folder', async () => {
    const renamed = join(handlers, 'billing');
    await saveWhileBusy(
      'folder',
      () => {
        renameSync(folder, renamed);
        folder = renamed;
      },
      'e7/l3@billing',
    );
    // The renamed folder is watched: a save inside it reloads.
    await saveWhileBusy('inRenamed', () => writeFileSync(handlerFile(), handlerSource('marker', 'e8')), 'e8/l3@billing');
  }, 120_000);

  it('a burst of saves (switching branches): the last one runs', async () => {
    await saveWhileBusy(
      'burst',
      () => {
        for (let i = 0; i < 10; i++) {
          renameOver(handlerFile(), handlerSource('marker', `b${i}`));
          unlinkSync(libFile);
          writeFileSync(libFile, libSource(`m${i}`));
          writeFileSync(join(folder, `tmp${i}.js`), handlerSource('burst', `b${i}`));
          unlinkSync(join(folder, `tmp${i}.js`));
        }
        writeFileSync(handlerFile(), handlerSource('marker', 'final'));
      },
      'final/m9@billing',
    );
    // And the watch still works after it.
    await saveWhileBusy('afterBurst', () => writeFileSync(handlerFile(), handlerSource('marker', 'last')), 'last/m9@billing');
  }, 120_000);

  it('over all saves: every event ran exactly once, on the same emulator', async () => {
    // The emulator kept its stream and the consumer's position through every reload: it went on.
    const last = await settled();
    expect(BigInt(last.head)).toBeGreaterThan(BigInt(firstPosition.head));
    const marker = runs('marker');
    const twice = [...marker].filter(([, labels]) => labels.length !== 1);
    expect(twice).toEqual([]);
    expect([...marker.keys()].sort()).toEqual([...sent].sort());
    expect(cli.child.exitCode).toBeNull();
    cli.kill('SIGTERM');
    expect((await cli.exited).code).toBe(0);
  }, 60_000);
});

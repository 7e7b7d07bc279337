import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadedFiles, recordingLoads } from '../fixtures/record-loads/loads.js';
import { runCli } from './cli-process.js';

const COMMAND_MODULES = ['run', 'emulator', 'dev', 'check', 'dead-letters', 'deferred', 'init'].map((name) => `src/cli/commands/${name}.ts`);

/** The src/ files a CLI process loaded for `args`, with its result. */
async function loadsOf(args: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'dw-cli-loads-'));
  const loads = join(dir, 'loads.txt');
  const result = await runCli(args, { cwd: dir, env: recordingLoads(loads) });
  return { result, loaded: loadedFiles(loads).filter((path) => path.startsWith('src/')) };
}

// A command's module loads only when it runs (src/cli/command-list.ts): cold start, docs/benchmarks.md.
describe('the CLI loads only the command it runs', () => {
  it('run: none of the other commands, the emulator, the console or the dev loop', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-cli-run-'));
    const { result, loaded } = await loadsOf([
      'run',
      '--base-url',
      'http://127.0.0.1:1',
      '--destination',
      'd',
      '--api-key',
      'k',
      '--handlers',
      join(dir, 'no-handlers'),
      '--dead-letter',
      `file:${join(dir, 'dl.jsonl')}`,
    ]);
    // The worker started: it stopped at the missing handlers folder.
    expect(result.stderr).toContain('no-handlers does not exist (--handlers)');
    expect(result.code).toBe(2);
    expect(loaded).toContain('src/worker/start.ts');
    expect(loaded.filter((path) => COMMAND_MODULES.includes(path))).toEqual(['src/cli/commands/run.ts']);
    expect(loaded.filter((path) => /^src\/(emulator|console|dev|dead-letter-admin)\//.test(path))).toEqual([]);
  });

  it('--help lists every command and loads none of their modules', async () => {
    const { result, loaded } = await loadsOf(['--help']);
    expect(result.code).toBe(0);
    for (const name of ['run', 'emulator', 'dev', 'check', 'dead-letters', 'deferred', 'init [dir]'])
      expect(result.stdout).toContain(`durable-worker ${name} `);
    expect(loaded.filter((path) => path.startsWith('src/cli/commands/'))).toEqual([]);
  });

  it('a command named after an option whose value is another command name still runs', async () => {
    // `--log-level` takes `run` as its value here; the command is init (--help: nothing written).
    const { result, loaded } = await loadsOf(['--log-level', 'run', 'init', '--help']);
    expect(result.stdout).toContain('Start a project');
    expect(loaded).toContain('src/cli/commands/init.ts');
  });
});

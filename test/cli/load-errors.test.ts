/**
 * Errors point at the line: a handler that does not load is named once with file:line:column
 * (syntax errors in JavaScript and TypeScript, an error thrown while a module runs, in the file
 * that threw); `check` type-checks TypeScript handlers with the project's typescript (and says
 * when it cannot; --no-type-check skips it); `dev` reports type errors while the handlers run.
 */
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliProcess, REPO_ROOT, runCli } from './cli-process.js';

/** A project folder with `files` (relative path -> text) and, with `linked`, node_modules linking these packages to this repository's. */
function project(files: Record<string, string>, linked: string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), 'dw-load-errors-'));
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
  for (const name of linked) symlinkSync(name === 'durable-worker' ? REPO_ROOT : join(REPO_ROOT, 'node_modules', name), join(dir, 'node_modules', name));
  return dir;
}

const HANDLER_TS = `import { defineHandler } from 'durable-worker';
export default defineHandler({
  type: 'source_entry.updated',
  async handle(event, ctx) {
    const count: number = event.subject;
    ctx.log.info({ count }, 'typed ' + event.subject);
  },
});
`;

const problems = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('durable-worker: problem: '));

describe('load errors name file:line:column once', () => {
  it('a JavaScript syntax error: check (exit 1) and run (exit 2)', async () => {
    const dir = project({ 'handlers/bad.js': "export default {\n  type: 'x',\n  async handle() { const a = ; },\n};\n" });
    const file = join(dir, 'handlers', 'bad.js');
    const check = await runCli(['check'], { cwd: dir });
    expect(check.code).toBe(1);
    expect(problems(check.stderr)).toEqual([`durable-worker: problem: ${file}:3:30: cannot be loaded: SyntaxError: Unexpected token ';'`]);
    const run = await runCli(
      ['run', '--base-url', 'http://127.0.0.1:9', '--destination', 'd', '--api-key', 'k', '--idempotency', 'memory', '--metrics-port', '0'],
      { cwd: dir },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`durable-worker: ${file}:3:30: cannot be loaded: SyntaxError: Unexpected token ';'\n`);
  });

  it('an error thrown by a file the handler imports: the handler, then where it was thrown', async () => {
    const dir = project({ 'handlers/_lib/x.js': 'export const v = nope();\n', 'handlers/h.js': "import { v } from './_lib/x.js';\nexport default v;\n" });
    const check = await runCli(['check'], { cwd: dir });
    expect(problems(check.stderr)).toEqual([
      `durable-worker: problem: ${join(dir, 'handlers', 'h.js')}: cannot be loaded: ReferenceError: nope is not defined (at ${join(dir, 'handlers', '_lib', 'x.js')}:1:18)`,
    ]);
  });

  it('a TypeScript syntax error', async () => {
    const dir = project({ 'handlers/b.ts': 'const x: number = 1;\nconst y = ;\nexport default x;\n' });
    const check = await runCli(['check'], { cwd: dir });
    expect(problems(check.stderr)).toEqual([`durable-worker: problem: ${join(dir, 'handlers', 'b.ts')}:2:11: cannot be loaded: SyntaxError: Unexpected ";"`]);
  });
});

describe('check type-checks TypeScript handlers', () => {
  it("with the project's typescript: a type error is a problem at its line; --no-type-check skips", async () => {
    const dir = project({ 'handlers/typed.ts': HANDLER_TS }, ['durable-worker', 'typescript', '@types/node']);
    const check = await runCli(['check'], { cwd: dir });
    expect(check.code, check.stderr).toBe(1);
    expect(problems(check.stderr)).toEqual([
      `durable-worker: problem: ${join(dir, 'handlers', 'typed.ts')}:5:11: TS2322: Type 'string' is not assignable to type 'number'.`,
    ]);
    // dev's check after a save: the type errors alone, no handler module imported.
    writeFileSync(
      join(dir, 'handlers', 'typed.ts'),
      `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(join(dir, 'imported'))}, '');\n${HANDLER_TS}`,
    );
    const typesOnly = await runCli(['check', '--types-only'], { cwd: dir });
    expect(typesOnly.code, typesOnly.stderr).toBe(1);
    expect(problems(typesOnly.stderr)).toEqual([
      `durable-worker: problem: ${join(dir, 'handlers', 'typed.ts')}:7:11: TS2322: Type 'string' is not assignable to type 'number'.`,
    ]);
    expect(existsSync(join(dir, 'imported'))).toBe(false);
    writeFileSync(join(dir, 'handlers', 'typed.ts'), HANDLER_TS);
    const skipped = await runCli(['check', '--no-type-check'], { cwd: dir });
    expect(skipped.code, skipped.stderr).toBe(0);
    writeFileSync(join(dir, 'handlers', 'typed.ts'), HANDLER_TS.replace('const count: number', 'const count: string'));
    const fixed = await runCli(['check'], { cwd: dir });
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(fixed.stdout).toMatch(/note: types: 1 TypeScript handler\(s\) checked \(typescript \d+\.\d+/);
  });

  it('without typescript in the project it says so (not a problem)', async () => {
    const dir = project({ 'handlers/typed.ts': HANDLER_TS }, ['durable-worker']);
    const check = await runCli(['check'], { cwd: dir });
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain(
      'note: 1 TypeScript handler(s) not type-checked: no typescript in this project (npm install -D typescript; --no-type-check to skip)',
    );
  });

  it('dev reports a type error as a warning while the handler runs', async () => {
    const dir = project({ 'handlers/typed.ts': HANDLER_TS }, ['durable-worker', 'typescript', '@types/node']);
    const cli = new CliProcess(['dev', '--demo', '--port', '0', '--no-console', '--metrics-port', '0', '--metrics-host', '127.0.0.1'], { cwd: dir });
    try {
      const [line] = await cli.waitForOutput(/\{[^\n]*"msg":"type error: [^\n]*\n/, 60_000);
      expect(JSON.parse(line)).toMatchObject({
        level: 40,
        typeError: `${join(dir, 'handlers', 'typed.ts')}:5:11: TS2322: Type 'string' is not assignable to type 'number'.`,
      });
      await cli.waitForOutput(/"msg":"typed product-\d+"/, 30_000);
      cli.kill('SIGTERM');
      expect((await cli.exited).code).toBe(0);
    } finally {
      cli.kill('SIGKILL');
    }
  }, 90_000);

  it('a handler that loads in the main thread but not in a worker thread: run exits 2 naming the cause, its handler never called', async () => {
    // The threads start while the worker opens the rest (docs/benchmarks.md#cold-start); the start still waits for them.
    const dir = project({
      'handlers/driver.mjs': `import { isMainThread } from 'node:worker_threads';
import { writeFileSync } from 'node:fs';
if (!isMainThread) throw new Error('no database driver in this thread');
export default { [Symbol.for('durable-worker.handler')]: true, type: '*', async handle() { writeFileSync('called.txt', 'called'); } };
`,
    });
    const run = await runCli(
      [
        'run',
        '--base-url',
        'http://127.0.0.1:9',
        '--destination',
        'd',
        '--api-key',
        'k',
        '--idempotency',
        'memory',
        '--metrics-port',
        '0',
        '--isolation',
        'thread',
      ],
      { cwd: dir },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `durable-worker: handlers cannot be loaded in a worker thread: ${join(dir, 'handlers', 'driver.mjs')}:3:26: cannot be loaded: no database driver in this thread\n`,
    );
    expect(existsSync(join(dir, 'called.txt'))).toBe(false);
  });
});

import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { projectFiles, type InitFile } from '../init-templates.js';
import { booleanFlag, booleanFlagValue } from '../run-options.js';

interface PackageJson {
  version: string;
  devDependencies?: Record<string, string>;
}

/** This package's package.json (src/cli/commands/ and dist/cli/commands/ sit three levels below it). */
function ownPackage(): PackageJson {
  return JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as PackageJson;
}

/** An npm package name from a folder name: lower case, only the characters npm allows. */
export function packageNameFor(dir: string): string {
  const name = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+|[-]+$/g, '');
  return name === '' ? 'my-worker' : name.slice(0, 214);
}

/** The files of `files` that already exist in `dir`. */
function existing(dir: string, files: readonly InitFile[]): string[] {
  return files.filter((file) => existsSync(join(dir, file.path))).map((file) => file.path);
}

export function initCommand(context: CliContext, setExitCode: (code: number) => void): CommandModule {
  return {
    command: 'init [dir]',
    describe: 'Start a project: package.json, a handler and its test in handlers/, .gitignore',
    builder: (yargs: Argv) =>
      yargs
        .positional('dir', { type: 'string', describe: 'Folder of the new project (default: the current folder; created when missing)' })
        .option('typescript', booleanFlag('Write the handler and its test in TypeScript, with a tsconfig.json', 'Init:'))
        .option('force', booleanFlag('Overwrite files that already exist (default: refuse, naming the first one)', 'Init:'))
        .example('$0 init my-worker', 'A JavaScript project in ./my-worker; then cd my-worker && npm install && npm run dev -- --demo')
        .example('$0 init --typescript', 'A TypeScript project in the current folder')
        .epilogue('Writes package.json (scripts dev, test, check), handlers/entry-changes.js and its test (vitest and durable-worker/testing), .gitignore (the state folder .durable-worker/). Exit codes: 0 written, 2 a file exists (without --force) or bad input.'),
    handler: (argv) => {
      const args = argv as { dir?: string; typescript?: unknown; force?: unknown };
      const typescript = booleanFlagValue(args.typescript, '--typescript');
      const force = booleanFlagValue(args.force, '--force');
      const dir = resolve(context.cwd, args.dir ?? '.');
      if (existsSync(dir) && !statSync(dir).isDirectory()) throw new ConfigError(`${dir} is not a folder`, 'dir');
      const own = ownPackage();
      const dev = own.devDependencies ?? {};
      const files = projectFiles({
        name: packageNameFor(dir),
        typescript,
        packageRange: `^${own.version}`,
        vitestRange: dev.vitest ?? '*',
        typescriptRange: dev.typescript ?? '*',
        nodeTypesRange: dev['@types/node'] ?? '*',
      });
      const clashes = existing(dir, files);
      if (clashes.length > 0 && !force) {
        throw new ConfigError(`${join(dir, clashes[0]!)} already exists: init writes nothing over a file (--force to overwrite ${clashes.length === 1 ? 'it' : `it and ${clashes.length - 1} more`})`, 'force');
      }
      for (const file of files) {
        const path = join(dir, file.path);
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, file.content);
      }
      const cd = dir === context.cwd ? '' : `cd ${args.dir ?? dir}\n  `;
      context.stdout.write(
        `Wrote ${files.map((f) => f.path).join(', ')} in ${dir}\n\nNext:\n  ${cd}npm install            # before durable-worker is on the registry: npm install /path/to/durable-worker-${own.version}.tgz (npm pack in its clone)\n  npm test\n  npm run dev -- --demo    # emulator + worker + console; a saved handler reloads\n`,
      );
      setExitCode(0);
    },
  };
}

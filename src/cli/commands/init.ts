import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { dependencySpec, PACKAGE_ROOT, readManifest } from '../init-source.js';
import { projectFiles, type InitFile } from '../init-templates.js';
import { booleanFlag, booleanFlagValue } from '../run-options.js';

/** `--store`: where `run` keeps its idempotency records, and the driver package each one needs. */
const STORES = { sqlite: [], postgres: ['pg'], redis: ['redis'] } as const satisfies Record<string, readonly string[]>;
type Store = keyof typeof STORES;
/** `--otel`: the SDK and the default (OTLP over http/protobuf) exporter, optional peers of this package. */
const OTEL_PACKAGES = ['@opentelemetry/sdk-trace-node', '@opentelemetry/resources', '@opentelemetry/exporter-trace-otlp-proto'] as const;
/** How a store is configured once the project runs against a real one. */
const STORE_HINT: Record<Store, string | undefined> = {
  sqlite: undefined,
  postgres: 'DURABLE_WORKER_IDEMPOTENCY=postgres://USER:PASSWORD@HOST:5432/DB',
  redis: 'DURABLE_WORKER_IDEMPOTENCY=redis://HOST:6379',
};

/**
 * The project's answers to npm's install-script question (npm 11 lists unanswered ones after each
 * install): esbuild (under tsx and vitest) may run its postinstall, a check of its native binary;
 * better-sqlite3, where this package still lists it, is the SQLite driver of Node < 22.13 only and
 * its build from source takes minutes, so it is not built (Node >= 22.13 has node:sqlite).
 */
function installScripts(own: { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }): Record<string, boolean> {
  const listed = { ...own.dependencies, ...own.optionalDependencies };
  return { esbuild: true, ...('better-sqlite3' in listed ? { 'better-sqlite3': false } : {}) };
}

/** A path as a shell word (quoted when it holds anything but safe characters). */
const shellWord = (word: string) => (/^[\w./@:+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

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
    builder: (yargs: Argv) =>
      yargs
        .positional('dir', { type: 'string', describe: 'Folder of the new project (default: the current folder; created when missing)' })
        .option('typescript', booleanFlag('Write the handler and its test in TypeScript, with a tsconfig.json', 'Init:'))
        .option('store', {
          type: 'string',
          default: 'sqlite',
          describe: `The idempotency store the project will run with (${Object.keys(STORES).join(', ')}): adds its driver (pg, redis) to the dependencies`,
          group: 'Init:',
          requiresArg: true,
        })
        .option('otel', booleanFlag('Add the OpenTelemetry SDK and OTLP exporter to the dependencies (for run --otel)', 'Init:'))
        .option('force', booleanFlag('Overwrite files that already exist (default: refuse, naming the first one)', 'Init:'))
        .example('$0 init my-worker', 'A JavaScript project in ./my-worker; then cd my-worker && npm install && npm run dev -- --demo')
        .example('$0 init --typescript', 'A TypeScript project in the current folder')
        .epilogue(
          'Writes package.json (scripts dev, test, check), handlers/entry-changes.js and its test (vitest and durable-worker/testing), .gitignore (the state folder .durable-worker/). Exit codes: 0 written, 2 a file exists (without --force) or bad input.',
        ),
    handler: (argv) => {
      const args = argv as { dir?: string; typescript?: unknown; force?: unknown; otel?: unknown; store?: Store };
      const typescript = booleanFlagValue(args.typescript, '--typescript');
      const force = booleanFlagValue(args.force, '--force');
      const otel = booleanFlagValue(args.otel, '--otel');
      const store = args.store ?? 'sqlite';
      if (!Object.hasOwn(STORES, store)) throw new ConfigError(`--store must be one of ${Object.keys(STORES).join(', ')} (got ${String(store)})`, 'store');
      const dir = resolve(context.cwd, args.dir ?? '.');
      if (existsSync(dir) && !statSync(dir).isDirectory()) throw new ConfigError(`${dir} is not a folder`, 'dir');
      const own = readManifest(PACKAGE_ROOT);
      if (own === undefined) throw new Error(`cannot read ${join(PACKAGE_ROOT, 'package.json')}`);
      const dev = own.devDependencies ?? {};
      // Optional packages at the ranges this package was built and tested with.
      const range = (name: string) => own.peerDependencies?.[name] ?? own.dependencies?.[name] ?? dev[name] ?? '*';
      const extra = [...STORES[store], ...(otel ? OTEL_PACKAGES : [])];
      const files = projectFiles({
        name: packageNameFor(dir),
        typescript,
        packageRange: dependencySpec(PACKAGE_ROOT, own.version, dir),
        dependencies: Object.fromEntries(extra.map((name) => [name, range(name)])),
        allowScripts: installScripts(own),
        vitestRange: dev.vitest ?? '*',
        typescriptRange: dev.typescript ?? '*',
        nodeTypesRange: dev['@types/node'] ?? '*',
      });
      const clashes = existing(dir, files);
      if (clashes.length > 0 && !force) {
        throw new ConfigError(
          `${join(dir, clashes[0]!)} already exists: init writes nothing over a file (--force to overwrite ${clashes.length === 1 ? 'it' : `it and ${clashes.length - 1} more`})`,
          'force',
        );
      }
      for (const file of files) {
        const path = join(dir, file.path);
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, file.content);
      }
      const next = [
        ...(dir === context.cwd ? [] : [`cd ${shellWord(relative(context.cwd, dir).startsWith('..') ? dir : relative(context.cwd, dir))}`]),
        'npm install',
        'npm test',
        'npm run dev -- --demo      # emulator + worker + console; a saved handler reloads',
      ];
      const hint = STORE_HINT[store];
      context.stdout.write(
        `Wrote ${files.map((f) => f.path).join(', ')} in ${dir}\n\nNext:\n${next.map((line) => `  ${line}\n`).join('')}` +
          (hint === undefined ? '' : `\nAgainst your ${store} store: ${hint} npm run dev\n`),
      );
      setExitCode(0);
    },
  };
}

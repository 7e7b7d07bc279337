/**
 * The files `durable-worker init` writes: a project with one handler and its test, for JavaScript
 * or (`--typescript`) TypeScript. The handler is the one `dev --demo` exercises (it logs what changed
 * in each entry), so the first `npm run dev -- --demo` shows it at work.
 */

export interface InitFile {
  /** Relative to the project folder, `/`-separated. */
  path: string;
  content: string;
}

export interface TemplateOptions {
  /** npm package name for the project. */
  name: string;
  typescript: boolean;
  /** The spec the project depends on durable-worker with: where `init` ran from (`file:...`), or a registry range. */
  packageRange: string;
  /** Further dependencies (a store's driver, the OpenTelemetry SDK): name -> range. */
  dependencies?: Record<string, string>;
  /** npm's install-script decisions (package.json `allowScripts`), so that `npm install` asks nothing. */
  allowScripts?: Record<string, boolean>;
  /** The vitest range the tests run with. */
  vitestRange: string;
  /** TypeScript and Node types ranges (`--typescript`). */
  typescriptRange: string;
  nodeTypesRange: string;
}

const HANDLER_BODY = `export default defineHandler({
  type: 'source_entry.updated',
  async handle(event, ctx) {
    // The entry before and after the ingest (previous is null for a new entry), in the read shape.
    const { sourceId, previous, current } = event.data;
    const before = new Map((previous?.properties ?? []).map((p) => [p.id, p.value]));
    const changed = current.properties.filter((p) => JSON.stringify(before.get(p.id) ?? null) !== JSON.stringify(p.value)).map((p) => p.id);
    ctx.log.info({ sourceId, entry: current.id, changed }, previous === null ? \`entry \${current.id} created\` : \`entry \${current.id} updated: \${changed.join(', ') || 'no change'}\`);
  },
});
`;

const HANDLER_HEADER = `// A handler: every .js/.mjs/.ts file of this folder whose default export is made with
// defineHandler() (files starting with _ and *.test.* files are not handlers). \`npm run dev\`
// reloads it when you save; throw to have the event retried, throw PermanentError to dead-letter it.
import { defineHandler } from 'durable-worker';
`;

function testFile(ext: string): string {
  return `import { describe, expect, it } from 'vitest';
import { createTestEvent, entryUpdatedData, runHandler, sourceEntry } from 'durable-worker/testing';
import entryChanges from './entry-changes.${ext}';

describe('entry-changes', () => {
  it('logs which properties of an entry changed', async () => {
    const event = createTestEvent(
      'source_entry.updated',
      entryUpdatedData({ current: sourceEntry('p-1', { name: 'Kettle', price: 19.5 }), previous: sourceEntry('p-1', { name: 'Kettle', price: 24.5 }) }),
    );
    const outcome = await runHandler(entryChanges, event);
    expect(outcome.status).toBe('ok');
    expect(outcome.logs.map((log) => log.msg)).toEqual(['entry p-1 updated: price']);
  });
});
`;
}

const GITIGNORE = `node_modules/
# durable-worker's local state: the SQLite idempotency store and the dead letters of \`dev\`
.durable-worker/
*.tgz
`;

const TSCONFIG = `{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "noEmit": true,
    "skipLibCheck": true,
    "types": ["node"]
  },
  "include": ["handlers"]
}
`;

export function projectFiles(options: TemplateOptions): InitFile[] {
  const ext = options.typescript ? 'ts' : 'js';
  const scripts: Record<string, string> = {
    dev: 'durable-worker dev',
    test: 'vitest run',
    // check type-checks TypeScript handlers itself, with the project's typescript and tsconfig.json.
    check: 'durable-worker check',
  };
  const devDependencies: Record<string, string> = { vitest: options.vitestRange };
  if (options.typescript) {
    devDependencies['@types/node'] = options.nodeTypesRange;
    devDependencies.typescript = options.typescriptRange;
  }
  const pkg = {
    name: options.name,
    version: '0.1.0',
    private: true,
    type: 'module',
    scripts,
    dependencies: { 'durable-worker': options.packageRange, ...options.dependencies },
    devDependencies,
    ...(options.allowScripts === undefined ? {} : { allowScripts: options.allowScripts }),
  };
  const files: InitFile[] = [
    { path: 'package.json', content: `${JSON.stringify(pkg, null, 2)}\n` },
    { path: '.gitignore', content: GITIGNORE },
    { path: `handlers/entry-changes.${ext}`, content: `${HANDLER_HEADER}\n${HANDLER_BODY}` },
    { path: `handlers/entry-changes.test.${ext}`, content: testFile('js') },
  ];
  if (options.typescript) files.push({ path: 'tsconfig.json', content: TSCONFIG });
  return files;
}

import { readdir, realpath, stat } from 'node:fs/promises';
import { extname, join, relative, resolve, sep } from 'node:path';
import { ErrorCodes, hasCode, HandlerLoadError } from '../errors.js';
import { validatePattern } from '../runtime/type-pattern.js';
import { HANDLER_BRAND, transactionalProblem, type HandlerContext, type LifeCycleContext, type TeardownContext } from './define.js';
import { checkDefinitionOptions } from './definition-options.js';
import type { ResolvedLimits } from './limits-options.js';
import { describeLoadError } from './load-error.js';
import { handlerModuleUrl } from './module-url.js';

/** A handler module found in the handlers folder, validated. */
export interface LoadedHandler {
  /** File path relative to the folder without extension, `/`-separated (also the prefix of its idempotency keys, so renaming a file starts its keys afresh). */
  name: string;
  /** Absolute path of the module. */
  file: string;
  /** Type patterns: exact, `prefix.*` or `*`. */
  types: string[];
  /** Per-event timeout in ms declared by the handler. */
  timeoutMs?: number;
  /** The handler function (absent when only the shape is needed, e.g. across a thread). */
  handle?: (event: never, ctx: HandlerContext) => unknown;
  /** A batch handler (defineBatchHandler): `handleBatch` instead of `handle`. */
  batch?: { handleBatch: (events: never[], ctx: HandlerContext) => unknown; maxBatchSize: number | undefined };
  setup?: (ctx: LifeCycleContext) => unknown;
  teardown?: (ctx: TeardownContext) => unknown;
  /** What `setup` returned in this thread (`ctx.resources`); set by the life cycle (life-cycle.ts). */
  resources?: unknown;
  /**
   * `transactional: true`: each call runs in a transaction of the PostgreSQL store's database that
   * also writes its events' done marks (`ctx.tx`). Absent for other handlers.
   */
  transactional?: true;
  /** The handler's `limits`, validated, in the limiter's units. Absent without limits. */
  limits?: ResolvedLimits;
}

export { HandlerLoadError } from '../errors.js';

const HANDLER_EXTENSIONS = new Set(['.js', '.mjs', '.ts', '.mts']);

/** Files the loader skips: declarations, tests, and anything private (`_x`) or hidden (`.x`). */
function isCandidate(fileName: string): boolean {
  if (fileName.startsWith('_') || fileName.startsWith('.')) return false;
  if (/\.d\.[mc]?ts$/.test(fileName)) return false;
  if (/\.(test|spec)\.[^.]+$/.test(fileName) || fileName.includes('.test.')) return false;
  return HANDLER_EXTENSIONS.has(extname(fileName));
}

/**
 * The handler modules under `dir`, in name order. Symbolic links are followed, to files and to
 * folders: the kubelet mounts a ConfigMap, a Secret or a projected volume as `NAME -> ..data/NAME`
 * with `..data -> ..<timestamp>/` (its atomic writer swaps `..data` on an update), so the names a
 * user gave are links and the real files sit in hidden folders, which stay skipped like every
 * hidden name. A folder reached twice (a link loop) is listed once.
 */
async function listModules(dir: string, seen: Set<string> = new Set()): Promise<string[]> {
  seen.add(await realpath(dir));
  const entries = await readdir(dir, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (entry.name.startsWith('_') || entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    let kind: 'folder' | 'file' | 'other' = entry.isDirectory() ? 'folder' : entry.isFile() ? 'file' : 'other';
    if (entry.isSymbolicLink()) {
      const target = await stat(path).catch(() => undefined);
      if (target === undefined) {
        if (isCandidate(entry.name)) throw new HandlerLoadError(path, `${path}: a symbolic link to a file that does not exist`);
        continue;
      }
      kind = target.isDirectory() ? 'folder' : target.isFile() ? 'file' : 'other';
    }
    if (kind === 'folder') {
      if (!seen.has(await realpath(path))) files.push(...(await listModules(path, seen)));
    } else if (kind === 'file' && isCandidate(entry.name)) files.push(path);
  }
  return files;
}

/** The handler modules of a folder, as `loadHandlers` would import them, without importing any. */
export const listHandlerModules = (dir: string): Promise<string[]> => listModules(resolve(dir));

let tsImportPromise: Promise<(specifier: string, parent: string) => Promise<unknown>> | undefined;

/**
 * TypeScript handlers run without a build step: tsx's scoped `tsImport` compiles them on import, in
 * the main thread and in every worker thread alike (`--import tsx/esm` does not reach worker threads
 * on Node 20; an API call made inside the thread does).
 */
async function importModule(file: string): Promise<Record<string, unknown>> {
  const url = handlerModuleUrl(file);
  const ext = extname(file);
  if (ext === '.ts' || ext === '.mts') {
    tsImportPromise ??= import('tsx/esm/api').then((m) => m.tsImport as (specifier: string, parent: string) => Promise<unknown>);
    const tsImport = await tsImportPromise;
    return (await tsImport(url, import.meta.url)) as Record<string, unknown>;
  }
  return (await import(url)) as Record<string, unknown>;
}

function handlerName(dir: string, file: string): string {
  const rel = relative(dir, file);
  return rel
    .slice(0, rel.length - extname(rel).length)
    .split(sep)
    .join('/');
}

/** Reads a default export; tsx may wrap CJS-looking modules in one more `default` layer. */
function defaultExport(module: Record<string, unknown>): unknown {
  let value = module.default;
  if (value !== null && typeof value === 'object' && !(HANDLER_BRAND in value) && 'default' in value) {
    value = (value as { default: unknown }).default;
  }
  return value;
}

/**
 * Validates one module's default export. A user's handler imports `defineHandler` from the
 * package `durable-worker`, which may be another module instance than ours (a copy in the app's
 * node_modules, dist vs src): the `Symbol.for` brand is realm-wide, so it is checked, never instanceof.
 */
export function toLoadedHandler(name: string, file: string, exported: unknown): LoadedHandler {
  if (exported === undefined)
    throw new HandlerLoadError(
      file,
      `${file}: no default export (export default defineHandler({ type, handle }), or defineBatchHandler({ type, handleBatch }))`,
    );
  if (exported === null || typeof exported !== 'object' || (exported as Record<symbol, unknown>)[HANDLER_BRAND] !== true) {
    throw new HandlerLoadError(file, `${file}: the default export is not a handler made with defineHandler() or defineBatchHandler() from 'durable-worker'`);
  }
  const definition = exported as {
    type?: unknown;
    handle?: unknown;
    handleBatch?: unknown;
    maxBatchSize?: unknown;
    timeoutMs?: unknown;
    setup?: unknown;
    teardown?: unknown;
    transactional?: unknown;
  };
  const types = Array.isArray(definition.type) ? (definition.type as unknown[]) : [definition.type];
  if (types.length === 0) throw new HandlerLoadError(file, `${file}: \`type\` lists no event type`);
  for (const type of types) {
    const problem = validatePattern(type);
    if (problem !== undefined) throw new HandlerLoadError(file, `${file}: bad type pattern ${JSON.stringify(type)}: ${problem}`);
  }
  const isBatch = typeof definition.handleBatch === 'function';
  if (!isBatch && typeof definition.handle !== 'function') throw new HandlerLoadError(file, `${file}: \`handle\` is not a function`);
  if (isBatch && definition.handle !== undefined)
    throw new HandlerLoadError(file, `${file}: a handler has either \`handle\` (defineHandler) or \`handleBatch\` (defineBatchHandler), not both`);
  const maxBatchSize = definition.maxBatchSize;
  if (maxBatchSize !== undefined && (typeof maxBatchSize !== 'number' || !Number.isInteger(maxBatchSize) || maxBatchSize < 1)) {
    throw new HandlerLoadError(file, `${file}: \`maxBatchSize\` must be a positive integer (got ${String(maxBatchSize)})`);
  }
  const timeoutMs = definition.timeoutMs;
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0)) {
    throw new HandlerLoadError(file, `${file}: \`timeoutMs\` must be a positive number of milliseconds (got ${String(timeoutMs)})`);
  }
  for (const hook of ['setup', 'teardown'] as const) {
    if (definition[hook] !== undefined && typeof definition[hook] !== 'function') throw new HandlerLoadError(file, `${file}: \`${hook}\` must be a function`);
  }
  const transactional = transactionalProblem(definition.transactional);
  if (transactional !== undefined) throw new HandlerLoadError(file, `${file}: ${transactional}`);
  let limits: ResolvedLimits | undefined;
  try {
    limits = checkDefinitionOptions(isBatch ? 'defineBatchHandler' : 'defineHandler', definition);
  } catch (err) {
    throw new HandlerLoadError(file, `${file}: ${(err as Error).message}`, { cause: err });
  }
  const loaded: LoadedHandler = { name, file, types: [...new Set(types as string[])] };
  if (limits !== undefined) loaded.limits = limits;
  if (timeoutMs !== undefined) loaded.timeoutMs = timeoutMs;
  if (definition.transactional === true) loaded.transactional = true;
  if (isBatch) loaded.batch = { handleBatch: definition.handleBatch as NonNullable<LoadedHandler['batch']>['handleBatch'], maxBatchSize };
  else loaded.handle = definition.handle as LoadedHandler['handle'];
  if (definition.setup !== undefined) loaded.setup = definition.setup as LoadedHandler['setup'];
  if (definition.teardown !== undefined) loaded.teardown = definition.teardown as LoadedHandler['teardown'];
  return loaded;
}

export interface LoadHandlersOptions {
  /** A missing or empty folder is not an error (other handlers exist, e.g. `--forward-url`). Default false. */
  allowEmpty?: boolean;
}

/**
 * Loads every handler module under `dir` (recursive; `.js`, `.mjs`, `.ts`, `.mts`; skips `*.d.ts`,
 * `*.test.*` and names starting with `_` or `.`). Fails fast with `DW_ERR_HANDLER_LOAD` naming the
 * file and the problem: the worker must not start half-configured.
 */
export async function loadHandlers(dir: string, options: LoadHandlersOptions = {}): Promise<LoadedHandler[]> {
  const root = resolve(dir);
  const info = await stat(root).catch(() => undefined);
  if (info === undefined) {
    if (options.allowEmpty === true) return [];
    throw new HandlerLoadError(root, `handlers folder ${root} does not exist (--handlers)`);
  }
  if (!info.isDirectory()) throw new HandlerLoadError(root, `handlers folder ${root} is not a folder (--handlers)`);
  const files = await listModules(root);
  if (files.length === 0) {
    if (options.allowEmpty === true) return [];
    throw new HandlerLoadError(root, `handlers folder ${root} holds no handler module (.js, .mjs or .ts with a defineHandler default export)`);
  }
  const handlers: LoadedHandler[] = [];
  for (const file of files) {
    let module: Record<string, unknown>;
    try {
      module = await importModule(file);
    } catch (err) {
      // A definition refused by defineHandler itself: the message names the key; the file is where.
      const message = hasCode(err, ErrorCodes.HANDLER_LOAD) ? `${file}: ${(err as Error).message}` : await describeLoadError(file, err);
      throw new HandlerLoadError(file, message, { cause: err });
    }
    handlers.push(toLoadedHandler(handlerName(root, file), file, defaultExport(module)));
  }
  return handlers;
}

import { watch, type FSWatcher } from 'node:fs';
import { extname, sep } from 'node:path';

/** Files whose change reloads the handlers: modules, and JSON they may import. */
const WATCHED_EXTENSIONS = new Set(['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts', '.json']);

/**
 * Whether a changed path (relative to the handlers folder) can change what the handlers do: not
 * under node_modules or a hidden folder (.git), not an editor's backup or swap file, not a test.
 * Private files (`_lib/`) count: handlers import them.
 */
export function isWatchedChange(relativePath: string): boolean {
  const parts = relativePath.split(/[\\/]/);
  if (parts.some((part) => part === 'node_modules' || part.startsWith('.'))) return false;
  const name = parts[parts.length - 1] ?? '';
  if (name.endsWith('~') || /\.(test|spec)\.[^.]+$/.test(name)) return false;
  return WATCHED_EXTENSIONS.has(extname(name));
}

export interface HandlerWatchOptions {
  /** Quiet time after the last change before `onChange` (an editor's save is several writes). */
  debounceMs: number;
  /** The changed paths, relative to the folder, once quiet. */
  onChange(paths: string[]): void;
  onError(err: unknown): void;
}

/** Watches a handlers folder and everything under it; `close` stops. */
export function watchHandlersFolder(dir: string, options: HandlerWatchOptions): { close(): void } {
  let changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  const watcher: FSWatcher = watch(dir, { recursive: true, persistent: false }, (_event, filename) => {
    // Some platforms do not name the file: count it as a change of the folder.
    const path = filename === null ? '' : filename.toString();
    if (path !== '' && !isWatchedChange(path)) return;
    changed.add(path === '' ? `.${sep}` : path);
    clearTimeout(timer);
    timer = setTimeout(() => {
      const paths = [...changed];
      changed = new Set();
      options.onChange(paths);
    }, options.debounceMs);
  });
  watcher.on('error', options.onError);
  return {
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}

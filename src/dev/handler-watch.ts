import { watch, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';

/** Files whose change reloads the handlers: modules, and JSON they may import. */
const WATCHED_EXTENSIONS = new Set(['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts', '.json']);

/** Folders never watched (nor walked): installed packages and hidden folders (.git). */
const isSkippedFolder = (part: string) => part === 'node_modules' || part.startsWith('.');

/**
 * Whether a changed path (relative to the handlers folder) can change what the handlers do: not
 * under node_modules or a hidden folder (.git), not an editor's backup or swap file, not a test.
 * Private files (`_lib/`) count: handlers import them.
 */
export function isWatchedChange(relativePath: string): boolean {
  const parts = relativePath.split(/[\\/]/);
  if (parts.some(isSkippedFolder)) return false;
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

/**
 * Watches a handlers folder and everything under it; resolves once every folder is watched (saves
 * from then on are seen); `close` stops.
 *
 * One non-recursive watch per folder, not one recursive `fs.watch`: on Linux the recursive one (and
 * chokidar, which also watches each file) holds a watch on each file's inode, so a save that
 * replaces the file (a temporary file renamed over it, `sed -i`, `git checkout` deleting then
 * creating) leaves it watching the old inode and later saves are lost, silently. A folder's watch
 * reports every name written, created, deleted or renamed in it, whatever the inode; when a name
 * comes and goes, the tree is walked again so that new and renamed folders are watched and
 * removed ones released.
 */
export async function watchHandlersFolder(root: string, options: HandlerWatchOptions): Promise<{ close(): void }> {
  const folders = new Map<string, { watcher: FSWatcher; inode: number }>();
  let changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const note = (path: string) => {
    changed.add(path === '' ? `.${sep}` : path);
    clearTimeout(timer);
    timer = setTimeout(() => {
      const paths = [...changed];
      changed = new Set();
      options.onChange(paths);
    }, options.debounceMs);
  };

  let scanning: Promise<void> | undefined;
  let again = false;
  /** Walks the tree; watches folders that are new (or whose inode changed), releases gone ones. */
  const rescan = (initial = false): Promise<void> => {
    if (scanning !== undefined) {
      again = true;
      return scanning;
    }
    scanning = (async () => {
      do {
        again = false;
        const seen = new Map<string, number>();
        await walk(root, seen).catch((err: unknown) =>
          folders.size === 0 || (err as NodeJS.ErrnoException).code !== 'ENOENT' ? options.onError(err) : undefined,
        );
        if (closed) return;
        for (const [dir, entry] of folders) {
          if (seen.get(dir) === entry.inode) continue;
          entry.watcher.close();
          folders.delete(dir);
          if (!seen.has(dir)) note(relative(root, dir));
        }
        for (const [dir, inode] of seen) {
          if (folders.has(dir)) continue;
          let watcher: FSWatcher;
          try {
            watcher = watchFolder(dir);
          } catch {
            // Gone since the walk: its parent's event walks the tree again.
            continue;
          }
          folders.set(dir, { watcher, inode });
          if (!initial) note(relative(root, dir));
        }
      } while (again && !closed);
    })()
      .catch((err: unknown) => options.onError(err))
      .finally(() => (scanning = undefined));
    return scanning;
  };

  const watchFolder = (dir: string): FSWatcher => {
    const watcher = watch(dir, { persistent: false }, (event, filename) => {
      // Some platforms do not name the file: count it as a change of the folder.
      const path = filename === null ? relative(root, dir) : relative(root, join(dir, filename.toString()));
      if (filename === null || isWatchedChange(path)) note(path);
      if (event === 'rename' || filename === null) void rescan();
    });
    // A folder deleted or renamed away: the walk after its parent's event releases it.
    watcher.on('error', () => void rescan());
    return watcher;
  };

  await rescan(true);
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      for (const { watcher } of folders.values()) watcher.close();
      folders.clear();
    },
  };
}

/** Every folder under `dir` (itself included) with its inode, but node_modules and hidden ones. */
async function walk(dir: string, into: Map<string, number>): Promise<void> {
  const [info, entries] = await Promise.all([stat(dir), readdir(dir, { withFileTypes: true })]);
  into.set(dir, info.ino);
  await Promise.all(
    entries
      .filter((entry) => entry.isDirectory() && !isSkippedFolder(entry.name))
      // A folder removed between the listing and its walk is not there: the next walk settles it.
      .map((entry) => walk(join(dir, entry.name), into).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)))),
  );
}

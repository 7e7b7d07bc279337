/**
 * The file piscina starts each handler thread with. Piscina loads it with require() first; on Node
 * 20 and 22, require() of an ES module in a thread that is terminated meanwhile (the pool closing
 * while a thread starts, the watchdog ending a thread) aborts the whole process with a V8 fatal
 * error. An asynchronous import() is safe, so this entry is CommonJS and imports the ES thread
 * entry (thread-entry.ts) with import().
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

type RunTask = (task: unknown) => Promise<void>;

const entry: Promise<{ default: RunTask }> = import(pathToFileURL(join(__dirname, 'thread-entry.js')).href);
// A load error reaches the warm-up task, which rejects with it; not an unhandled rejection before.
entry.catch(() => {});

async function runTask(task: unknown): Promise<void> {
  return (await entry).default(task);
}

export = runTask;

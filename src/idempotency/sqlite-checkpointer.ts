import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { threadOpenerSource, type SqliteDriverName } from '../sqlite/index.js';

/** Indexes in the shared flags: a checkpoint is running; its RESTART holds the write lock. */
const RUNNING = 0;
const TAIL = 1;

/**
 * The thread's code, run with `eval` (a CommonJS script): no file to locate from sources or `dist/`,
 * nothing to compile for tsx. It owns a second connection to the file and checkpoints on request.
 *
 * PASSIVE passes copy the WAL into the database file without taking any lock a writer needs; each
 * pass also copies what was appended during the one before, so the passes shorten until one
 * commit's worth is left (or after a few). A final RESTART then copies that tail under the write
 * lock, so that the next writer starts the WAL from its beginning again: a process that writes every
 * few milliseconds would otherwise never let a PASSIVE checkpoint end with nothing left behind, and
 * the WAL file would grow for ever. Every pass pays two fsyncs (the WAL, then the database file), as
 * any checkpoint under synchronous=NORMAL does, so even the tail holds the write lock for several
 * milliseconds. The thread raises a flag in shared memory meanwhile, and the store awaits it
 * (`Atomics.waitAsync`) instead of blocking its event loop in SQLite's busy handler, which sleeps in
 * steps of 1, 2, 5, 10, 15... ms. The same memory tells the store the thread is idle again without waiting for its event loop to deliver a message.
 */
const threadSource = () => `
const { parentPort, workerData } = require('node:worker_threads');
${threadOpenerSource()}
const db = openSqlite(workerData.path, workerData.busyTimeoutMs);
db.exec('PRAGMA cache_size = -256'); // a checkpoint copies WAL frames to the file: it needs no page cache
const flags = new Int32Array(workerData.flags);
const checkpoint = (mode) => db.prepare('PRAGMA wal_checkpoint(' + mode + ')').get();
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    let result = checkpoint('PASSIVE');
    for (let pass = 1; pass < workerData.maxPasses; pass++) {
      const before = result.log;
      result = checkpoint('PASSIVE');
      if (result.log - before <= workerData.tailFrames) break;
    }
    Atomics.store(flags, ${TAIL}, 1);
    try {
      checkpoint('RESTART');
    } finally {
      Atomics.store(flags, ${TAIL}, 0);
      Atomics.notify(flags, ${TAIL});
    }
    parentPort.postMessage({ ok: true });
  } catch (err) {
    parentPort.postMessage({ ok: false, message: String((err && err.message) || err) });
  } finally {
    Atomics.store(flags, ${RUNNING}, 0);
  }
});
`;

/**
 * Frames appended during a PASSIVE pass at or below which the RESTART follows: about one commit
 * (a 100-key transaction writes ~100-150 pages with random keys).
 */
const TAIL_FRAMES = 200;
/** PASSIVE passes before the RESTART at most. */
const MAX_PASSES = 5;

/** `Atomics.waitAsync` (Node 16+), missing from the ES2023 lib typings this project compiles against. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(array: Int32Array, index: number, value: number, timeoutMs: number): { async: false; value: string } | { async: true; value: Promise<string> };
  }
).waitAsync;

export interface CheckpointerOptions {
  /** The driver the store's own connection uses: the thread opens the file with the same one. */
  driver: SqliteDriverName;
  path: string;
  busyTimeoutMs: number;
  /** Keys written between two checkpoints. */
  everyKeys: number;
  /** A checkpoint failed, or the thread died (then `onGiveUp` runs once). */
  onError: (err: Error) => void;
  /** The thread is gone for good: the caller checkpoints by itself again. */
  onGiveUp: () => void;
}

/**
 * Runs the WAL checkpoints of one SQLite file on a background thread. SQLite's drivers are
 * synchronous: a checkpoint on the caller's thread (SQLite's `wal_autocheckpoint`, run by whichever
 * commit crosses the threshold) copies thousands of pages and waits for two fsyncs, and the worker's
 * event loop stands still meanwhile: 120-330 ms every ~10,000 pages with random keys in a file of
 * 500,000 to 2,000,000 done marks (bench/store/claims.ts --interleave --prefill N).
 * Here the thread starts at the first checkpoint (short-lived stores never start it), one
 * checkpoint runs at a time, and a request arriving while one runs is folded into the next.
 * Durability is unchanged: a commit is in the WAL before it returns, and a checkpoint only moves
 * committed pages into the database file.
 */
export class WalCheckpointer {
  readonly #options: CheckpointerOptions;
  #worker: Worker | undefined;
  /** Shared with the thread: RUNNING is set here and cleared by the thread, TAIL is the thread's. */
  readonly #flags = new Int32Array(new SharedArrayBuffer(8));
  #keysSinceCheckpoint = 0;
  #gaveUp = false;

  constructor(options: CheckpointerOptions) {
    this.#options = options;
  }

  /** Counts keys committed; asks for a checkpoint once `everyKeys` accumulated. */
  wrote(keys: number): void {
    this.#keysSinceCheckpoint += keys;
    if (this.#keysSinceCheckpoint < this.#options.everyKeys || this.#gaveUp || Atomics.load(this.#flags, RUNNING) === 1) return;
    this.#keysSinceCheckpoint = 0;
    Atomics.store(this.#flags, RUNNING, 1);
    try {
      (this.#worker ??= this.#start()).postMessage('checkpoint');
    } catch (err) {
      this.#giveUp(err);
    }
  }

  /**
   * Undefined when a write may start now; while the thread's RESTART holds the write lock, a promise
   * that resolves once it let go (or after `busyTimeoutMs`: the write then waits in SQLite as usual).
   */
  writable(): Promise<string> | undefined {
    if (Atomics.load(this.#flags, TAIL) === 0) return undefined;
    const wait = waitAsync(this.#flags, TAIL, 1, this.#options.busyTimeoutMs);
    return wait.async ? wait.value : undefined;
  }

  /** Lets a running checkpoint finish, then stops the thread and closes its connection. */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#gaveUp = true;
    if (worker === undefined) return;
    const exited = once(worker, 'exit');
    worker.ref(); // unref'd while idle: awaited now, it must keep the event loop alive until it exits
    worker.postMessage('close');
    await exited;
  }

  #start(): Worker {
    const worker = new Worker(threadSource(), {
      eval: true,
      workerData: {
        path: this.#options.path,
        busyTimeoutMs: this.#options.busyTimeoutMs,
        flags: this.#flags.buffer,
        tailFrames: TAIL_FRAMES,
        maxPasses: MAX_PASSES,
      },
      // The thread only copies pages: a small heap is plenty.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
    });
    worker.unref(); // a store left open must not keep the process alive
    worker.on('message', (reply: { ok: boolean; message?: string }) => {
      if (!reply.ok) this.#options.onError(new Error(`WAL checkpoint failed: ${reply.message}`));
    });
    worker.on('error', (err) => this.#giveUp(err));
    worker.on('exit', (code) => {
      if (this.#worker === worker) this.#giveUp(new Error(`WAL checkpoint thread exited with code ${code}`));
    });
    return worker;
  }

  #giveUp(cause: unknown): void {
    if (this.#gaveUp) return;
    this.#gaveUp = true;
    this.#worker = undefined;
    Atomics.store(this.#flags, TAIL, 0); // a thread that died holding it releases nobody
    Atomics.notify(this.#flags, TAIL);
    this.#options.onError(cause instanceof Error ? cause : new Error(String(cause)));
    this.#options.onGiveUp();
  }
}

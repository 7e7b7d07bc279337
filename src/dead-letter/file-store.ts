import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { makeDirectory } from '../fs/make-directory.js';
import { closedSinkError, noPrefixError, sinkError } from './errors.js';
import { comparePageKeys, matchesQuery, pageKeyOf, type StoreQuery } from './query.js';
import { deadLetterId, toStored } from './record.js';
import { DEAD_LETTER_STATES, type DeadLetterRecord, type DeadLetterState, type StoredDeadLetter } from './sink.js';
import type { DeadLetterStore } from './store.js';

/**
 * `file:PATH`: JSON lines, appended, never rewritten in place: a worker process may hold the file
 * open for appends while a `dead-letters` command reads it, and a rewrite would strand the worker's
 * handle on the old file. So a change (a replay, a purge) is a new line with the whole record and
 * an `updatedAt`, and reading folds the lines in order:
 * - a line with `updatedAt` (a change) replaces the record;
 * - a line without (a worker's write) starts the record, or starts it over when it was replayed or
 *   purged; a second write of a record still `dead` (a process killed between the write and the
 *   ack writes it again on redelivery) is ignored, so it stays one record.
 * Lines of older versions (no id, prefix or state) read as `dead` records of every prefix.
 *
 * Writes are serialised through one handle so lines never interleave within the process, and a
 * record is flushed (datasync) before `write` resolves: the event is marked done and acked right
 * after. A change is not flushed on its own: lost in a crash, the record is `dead` again, and a
 * replay finds the replay's done mark and runs nothing. Appends of other processes land whole
 * (O_APPEND). The file only grows (a purge appends too); reading it again reads only what was
 * appended since, unless it was replaced or cut (rotated): then it is read anew.
 */
export class FileDeadLetterStore implements DeadLetterStore {
  readonly path: string;
  readonly #prefix: string | undefined;
  #handle: Promise<FileHandle> | undefined;
  #tail: Promise<void> = Promise.resolve();
  #closed = false;
  /** The fold so far, and where the next read starts: the file's identity, size read, partial line. */
  #records = new Map<string, StoredDeadLetter>();
  #read: { ino: number; offset: number; partial: Buffer } | undefined;

  constructor(path: string, prefix: string | undefined) {
    this.path = path;
    this.#prefix = prefix;
  }

  write(record: DeadLetterRecord): Promise<void> {
    if (this.#prefix === undefined) return Promise.reject(noPrefixError('file'));
    return this.#append('write', toStored(record, this.#prefix), true);
  }

  async list(query: StoreQuery): Promise<StoredDeadLetter[]> {
    const records = [...(await this.#fold()).values()].filter((record) => matchesQuery(record, query, this.#prefix));
    return records.sort((a, b) => comparePageKeys(pageKeyOf(a), pageKeyOf(b))).slice(0, query.limit);
  }

  async get(id: string): Promise<StoredDeadLetter[]> {
    return [...(await this.#fold()).values()].filter((record) => record.id === id && (this.#prefix === undefined || record.prefix === this.#prefix));
  }

  async update(next: StoredDeadLetter, expected: DeadLetterState): Promise<boolean> {
    const current = (await this.#fold()).get(recordKey(next));
    if (current?.state !== expected) return false;
    await this.#append('update', { ...next, updatedAt: next.updatedAt ?? new Date().toISOString() }, false);
    return true;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#tail;
    const handle = await this.#handle?.catch(() => undefined);
    await handle?.close().catch(() => {});
  }

  #append(operation: string, record: StoredDeadLetter, flush: boolean): Promise<void> {
    if (this.#closed) return Promise.reject(closedSinkError('file', operation));
    const line = `${JSON.stringify(record)}\n`;
    const result = this.#tail.then(async () => {
      try {
        this.#handle ??= makeDirectory(dirname(this.path)).then(() => open(this.path, 'a'));
        const handle = await this.#handle;
        await handle.appendFile(line, 'utf8');
        if (flush) await handle.datasync();
      } catch (err) {
        this.#handle = undefined;
        throw sinkError('file', `${operation} ${this.path}`, err);
      }
    });
    this.#tail = result.catch(() => {});
    return result;
  }

  /** Every record of the file, folded (see the class comment), keyed by prefix and id. */
  async #fold(): Promise<Map<string, StoredDeadLetter>> {
    if (this.#closed) throw closedSinkError('file', 'read');
    await this.#tail;
    let file: FileHandle;
    try {
      file = await open(this.path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw sinkError('file', `read ${this.path}`, err);
      this.#records = new Map();
      this.#read = undefined;
      return this.#records;
    }
    try {
      const { ino, size } = await file.stat();
      if (this.#read === undefined || this.#read.ino !== ino || size < this.#read.offset) {
        this.#records = new Map();
        this.#read = { ino, offset: 0, partial: Buffer.alloc(0) };
      }
      const read = this.#read;
      if (size > read.offset) {
        const buffer = Buffer.alloc(size - read.offset);
        const { bytesRead } = await file.read(buffer, 0, buffer.length, read.offset);
        read.offset += bytesRead;
        const bytes = Buffer.concat([read.partial, buffer.subarray(0, bytesRead)]);
        // After the last newline: a line still being written, kept as bytes for the next read (a
        // character cut in two must not be decoded half).
        const end = bytes.lastIndexOf(0x0a) + 1;
        read.partial = bytes.subarray(end);
        for (const line of bytes.subarray(0, end).toString('utf8').split('\n')) this.#apply(line);
      }
      return this.#records;
    } catch (err) {
      throw sinkError('file', `read ${this.path}`, err);
    } finally {
      await file.close().catch(() => {});
    }
  }

  #apply(line: string): void {
    const record = parseLine(line, this.#prefix ?? '');
    if (record === undefined) return;
    const key = recordKey(record);
    if (record.updatedAt === undefined && this.#records.get(key)?.state === 'dead') return;
    this.#records.set(key, record);
  }
}

function recordKey(record: Pick<StoredDeadLetter, 'prefix' | 'id'>): string {
  return `${record.prefix}\u0000${record.id}`;
}

/** A line as a stored record; undefined for a blank or torn line (a writer killed mid-line). */
function parseLine(line: string, legacyPrefix: string): StoredDeadLetter | undefined {
  if (line.trim() === '') return undefined;
  let value: Partial<StoredDeadLetter>;
  try {
    value = JSON.parse(line) as Partial<StoredDeadLetter>;
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || typeof value.handler !== 'string' || typeof value.event?.id !== 'string') return undefined;
  return {
    ...(value as StoredDeadLetter),
    id: typeof value.id === 'string' ? value.id : deadLetterId(value.handler, value.event.id),
    prefix: typeof value.prefix === 'string' ? value.prefix : legacyPrefix,
    state: DEAD_LETTER_STATES.includes(value.state as DeadLetterState) ? (value.state as DeadLetterState) : 'dead',
    replayAttempts: typeof value.replayAttempts === 'number' ? value.replayAttempts : 0,
  };
}

import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DurableWorkerError } from '../errors.js';
import { makeDirectory } from '../fs/make-directory.js';
import type { DeadLetterRecord, DeadLetterSink } from './sink.js';

export const DEAD_LETTER_ERROR_CODE = 'DW_ERR_DEAD_LETTER';

/**
 * `file:PATH`: one JSON object per line, appended. Writes are serialised through one handle so lines
 * never interleave, and each is flushed (datasync) before `write` resolves: the event is marked done
 * and acked right after, so the record must not be lost in a crash.
 */
export class FileDeadLetterSink implements DeadLetterSink {
  readonly path: string;
  #handle: Promise<FileHandle> | undefined;
  #tail: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(path: string) {
    this.path = path;
  }

  #open(): Promise<FileHandle> {
    this.#handle ??= makeDirectory(dirname(this.path)).then(() => open(this.path, 'a'));
    return this.#handle;
  }

  write(record: DeadLetterRecord): Promise<void> {
    if (this.#closed) return Promise.reject(new DurableWorkerError(DEAD_LETTER_ERROR_CODE, `dead-letter file ${this.path} is closed`));
    const line = `${JSON.stringify(record)}\n`;
    const result = this.#tail.then(async () => {
      try {
        const handle = await this.#open();
        await handle.appendFile(line, 'utf8');
        await handle.datasync();
      } catch (err) {
        this.#handle = undefined;
        throw new DurableWorkerError(DEAD_LETTER_ERROR_CODE, `cannot write dead-letter file ${this.path}: ${(err as Error).message}`, { cause: err });
      }
    });
    this.#tail = result.catch(() => {});
    return result;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#tail;
    const handle = await this.#handle?.catch(() => undefined);
    await handle?.close().catch(() => {});
  }
}

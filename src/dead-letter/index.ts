import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { FileDeadLetterSink } from './file-sink.js';
import type { DeadLetterSink } from './sink.js';

export type { DeadLetterRecord, DeadLetterSink } from './sink.js';
export { FileDeadLetterSink } from './file-sink.js';

/**
 * Creates the sink named by `--dead-letter`: `file:PATH` (relative paths resolve against `cwd`;
 * `file:///abs/path` URLs work too). Nothing is opened until the first record.
 */
export function createDeadLetterSink(url: string, cwd: string = process.cwd()): DeadLetterSink {
  if (url.startsWith('file://')) {
    let path: string;
    try {
      path = new URL(url).pathname;
    } catch {
      throw new ConfigError(`--dead-letter: not a valid file URL (got ${JSON.stringify(url)})`, '--dead-letter');
    }
    return new FileDeadLetterSink(decodeURIComponent(path));
  }
  if (url.startsWith('file:')) {
    const raw = url.slice('file:'.length);
    if (raw === '') throw new ConfigError('--dead-letter: file: needs a path (file:PATH)', '--dead-letter');
    return new FileDeadLetterSink(isAbsolute(raw) ? raw : resolve(cwd, raw));
  }
  throw new ConfigError(`--dead-letter must be file:PATH (got ${JSON.stringify(url)})`, '--dead-letter');
}

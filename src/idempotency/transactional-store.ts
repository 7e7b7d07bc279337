import { relative, isAbsolute } from 'node:path';
import { ConfigError } from '../errors.js';
import { parseStoreUrl } from './index.js';
import { redactUrl } from '../runtime/redact-url.js';
import type { LoadedHandler } from '../handlers/loader.js';

/**
 * The one rule of where transactional handlers may run, for `check` and `run` alike: their effects
 * and the done marks commit in one transaction, so the idempotency store must be the PostgreSQL
 * database that holds the effects. Throws ConfigError (exit 2) naming every such handler's file and
 * the fix; file names relative to `cwd` when inside it.
 */
export function requireTransactionalStore(
  handlers: readonly Pick<LoadedHandler, 'file' | 'transactional'>[],
  idempotencyUrl: string,
  cwd: string = process.cwd(),
): void {
  const transactional = handlers.filter((handler) => handler.transactional === true);
  if (transactional.length === 0 || parseStoreUrl(idempotencyUrl, cwd).kind === 'postgres') return;
  const files = transactional.map((handler) => shown(handler.file, cwd)).join(', ');
  throw new ConfigError(
    `${files}: transactional: true needs --idempotency postgres://... (the database that holds its effects; got ${redactUrl(idempotencyUrl)})`,
    '--idempotency',
  );
}

function shown(file: string, cwd: string): string {
  const rel = relative(cwd, file);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? file : rel;
}

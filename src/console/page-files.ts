import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The page: plain HTML, CSS and ES modules in src/console/page/, served as they are (no bundler, no
 * build step at install). Resolved from this module, which is two levels below the package root both
 * as src/console/page-files.ts and as dist/console/page-files.js; the folder ships in the package
 * (package.json "files").
 */
export const PAGE_DIR = fileURLToPath(new URL('../../src/console/page/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Nothing but the page's own files runs in it, and event data is text, never markup: a CloudEvent's
 * `data` or a handler's log line that holds `<script>` must not run in the console's origin.
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export interface PageFile {
  body: Buffer;
  headers: Record<string, string>;
}

/** URL path -> file. Only files read at start are served: no path from a request touches the disk. */
export type PageFiles = ReadonlyMap<string, PageFile>;

export function loadPageFiles(dir: string = PAGE_DIR): PageFiles {
  const files = new Map<string, PageFile>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type === undefined) continue;
    files.set(`/${name}`, { body: readFileSync(join(dir, name)), headers: { 'content-type': type, 'cache-control': 'no-cache', ...SECURITY_HEADERS } });
  }
  const index = files.get('/index.html');
  if (index === undefined) throw new Error(`the console page is missing: no index.html in ${dir}`);
  files.set('/', index);
  return files;
}

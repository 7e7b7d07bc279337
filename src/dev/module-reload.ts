import { register } from 'node:module';
import { RELOAD_QUERY } from '../handlers/module-url.js';

/** The package's own folder (src/dev/ or dist/dev/, two levels below it): its modules are never reloaded. */
const PACKAGE_ROOT_URL = new URL('../../', import.meta.url).href;

/**
 * Module hooks (node:module `register`, run on Node's hooks thread). A module imported with
 * `?dw-reload=N` (src/handlers/module-url.ts) passes the query on to the files it imports, so a
 * reload re-evaluates a handler's helpers too. Packages keep their one copy: anything under
 * node_modules, and durable-worker itself (a handler folder inside the repository imports it by
 * name and resolves it to the repository's own dist/).
 */
function hooksSource(packageRootUrl: string): string {
  return `
const QUERY = ${JSON.stringify(RELOAD_QUERY)};
const PACKAGE_ROOT = ${JSON.stringify(packageRootUrl)};
export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  const parent = context.parentURL;
  if (parent === undefined || !parent.startsWith('file:') || !result.url.startsWith('file:')) return result;
  const generation = new URL(parent).searchParams.get(QUERY);
  if (generation === null) return result;
  const url = new URL(result.url);
  if (url.searchParams.has(QUERY) || url.pathname.includes('/node_modules/') || url.href.startsWith(PACKAGE_ROOT + 'dist/') || url.href.startsWith(PACKAGE_ROOT + 'src/')) return result;
  url.searchParams.set(QUERY, generation);
  return { ...result, url: url.href };
}
`;
}

let registered = false;

/** Installs the hooks once per process, before the first reload imports anything. */
export function enableModuleReload(): void {
  if (registered) return;
  registered = true;
  register(`data:text/javascript,${encodeURIComponent(hooksSource(PACKAGE_ROOT_URL))}`);
}

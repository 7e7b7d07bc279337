import { pathToFileURL } from 'node:url';

/**
 * The query that makes `dev` import the handler modules afresh after a save. Node keeps every ES
 * module it imported for the life of the process, keyed by URL: a reload imports the folder again
 * under a new URL (`?dw-reload=<generation>`), and the module hooks of src/dev/module-reload.ts pass
 * the same query on to the files those modules import (a `_lib/` file), outside node_modules. Worker
 * threads need none of it: a reload starts new threads, each with an empty module cache.
 */
export const RELOAD_QUERY = 'dw-reload';

/** 0 until the first reload: the URLs are then the plain file URLs (`run`, worker threads). */
let generation = 0;

/** Starts a new copy of the handler modules for this thread's next imports; returns its number. */
export function nextHandlerGeneration(): number {
  generation += 1;
  return generation;
}

/** The URL a handler module is imported from in this thread. */
export function handlerModuleUrl(file: string): string {
  const url = pathToFileURL(file);
  if (generation > 0) url.searchParams.set(RELOAD_QUERY, String(generation));
  return url.href;
}

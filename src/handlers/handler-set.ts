import { HandlerLoadError, loadHandlers, toLoadedHandler, type LoadedHandler } from './loader.js';

/** Name of the built-in forwarding handler (`--forward-url`, docs/configuration.md). */
export const FORWARD_HANDLER = '@forward';

export interface HandlerSetOptions {
  /** Folder of handler modules (absolute). */
  handlersDir?: string | undefined;
  /** `--forward-url`: adds the built-in forwarding handler under the name `@forward`. */
  forward?: { url: string; mode: 'binary' | 'structured'; rate?: string | undefined; concurrency?: number | undefined } | undefined;
}

/**
 * Every handler the worker runs: the folder's modules plus, with `--forward-url`, the forwarding
 * handler. The same function builds the set in the main thread (validation, routing, isolation
 * none) and once in every worker thread, so both see identical names.
 */
export async function loadHandlerSet(options: HandlerSetOptions): Promise<LoadedHandler[]> {
  const withForward = options.forward !== undefined;
  const handlers = options.handlersDir === undefined ? [] : await loadHandlers(options.handlersDir, { allowEmpty: withForward });
  if (options.forward !== undefined) {
    const { createForwardingHandler } = await import('../forward/forwarding-handler.js');
    handlers.push(toLoadedHandler(FORWARD_HANDLER, '(built-in forwarding handler)', createForwardingHandler(options.forward)));
  }
  if (handlers.length === 0) throw new HandlerLoadError(options.handlersDir ?? '.', 'no handler to run: give --handlers with handler modules or --forward-url');
  return handlers;
}

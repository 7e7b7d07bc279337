import type { Agent, Dispatcher } from 'undici';

/**
 * undici, imported at a client's first request instead of with the package entry. Handler modules
 * `import { defineHandler } from 'durable-worker'`, so with `--isolation thread` every worker thread
 * evaluates the entry; undici is a large module, and each thread would hold it in its heap for a
 * client the thread never uses.
 */
let undici: typeof import('undici') | undefined;

/** The undici module: at once once loaded, else after its first (shared) import. */
export function loadUndici(): typeof import('undici') | Promise<typeof import('undici')> {
  return undici ?? import('undici').then((module) => (undici = module));
}

/**
 * The keep-alive Agent a client creates for itself when it is given no dispatcher, created at its
 * first request. Closed before that, it never creates one and a request fails as on a closed Agent.
 */
export class OwnAgent {
  readonly #options: Agent.Options;
  #agent: Agent | undefined;
  #closed = false;

  constructor(options: Agent.Options) {
    this.#options = options;
  }

  /** The Agent, created (undici loaded) at the first call. */
  get(): Dispatcher | Promise<Dispatcher> {
    return this.#agent ?? this.#create();
  }

  async #create(): Promise<Dispatcher> {
    const { Agent, errors } = await loadUndici();
    if (this.#closed) throw new errors.ClientClosedError();
    this.#agent ??= new Agent(this.#options);
    return this.#agent;
  }

  close(): Promise<void> {
    this.#closed = true;
    return this.#agent?.close() ?? Promise.resolve();
  }
}

/** What the client's HTTP layer sends through: the caller's dispatcher, or the client's own Agent. */
export type HttpDispatcher = Dispatcher | OwnAgent;

/** The dispatcher to send through now. */
export function resolveDispatcher(dispatcher: HttpDispatcher): Dispatcher | Promise<Dispatcher> {
  return dispatcher instanceof OwnAgent ? dispatcher.get() : dispatcher;
}

/**
 * Routes an event type to every handler whose pattern matches (every matching handler runs,
 * docs/handlers.md). Patterns: an exact type, `prefix.*` (matches `prefix.` followed by anything), or `*`.
 */

export interface Routable {
  name: string;
  types: readonly string[];
}

/**
 * Precomputed routing: per type, the names of the matching handlers in load order (stable, so the
 * order of effects within one event is deterministic). Types are few and repeat endlessly, so the
 * answer is cached per type; the cache is bounded because types come from the wire.
 */
export class Router<H extends Routable = Routable> {
  readonly #handlers: readonly H[];
  readonly #exact = new Map<string, H[]>();
  readonly #prefixes: { prefix: string; handler: H }[] = [];
  readonly #wildcards: H[] = [];
  readonly #cache = new Map<string, readonly H[]>();
  readonly #maxCachedTypes: number;

  constructor(handlers: readonly H[], options: { maxCachedTypes?: number } = {}) {
    this.#handlers = handlers;
    this.#maxCachedTypes = options.maxCachedTypes ?? 10_000;
    for (const handler of handlers) {
      for (const pattern of new Set(handler.types)) {
        if (pattern === '*') this.#wildcards.push(handler);
        else if (pattern.endsWith('.*')) this.#prefixes.push({ prefix: pattern.slice(0, -1), handler });
        else {
          const list = this.#exact.get(pattern) ?? [];
          list.push(handler);
          this.#exact.set(pattern, list);
        }
      }
    }
  }

  get handlers(): readonly H[] {
    return this.#handlers;
  }

  /** Handlers that run for `type`, each once even when several of its patterns match. */
  route(type: string): readonly H[] {
    const cached = this.#cache.get(type);
    if (cached !== undefined) return cached;
    const matched = new Set<H>(this.#exact.get(type));
    for (const { prefix, handler } of this.#prefixes) if (type.startsWith(prefix)) matched.add(handler);
    for (const handler of this.#wildcards) matched.add(handler);
    const order = this.#handlers;
    const result = order.filter((h) => matched.has(h));
    if (this.#cache.size >= this.#maxCachedTypes) this.#cache.clear();
    this.#cache.set(type, result);
    return result;
  }
}

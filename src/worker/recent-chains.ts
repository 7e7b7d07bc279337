/**
 * The chains this process deferred a run into lately (docs/architecture.md, "Deferred runs"). A lease
 * reads the store's chains when it claims its keys; a run of its deferred after that read is known
 * here, so that a later event of the same (handler, subject) joins the chain instead of overtaking
 * it. An entry outlives any lease that could have read the store before it (a lease's length).
 */
export class RecentChains {
  readonly #deferredAtMs = new Map<string, number>();
  readonly #ttlMs: number;

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  add(chain: string, nowMs: number): void {
    // Re-inserted: the map stays in deferral order, so expired entries are at its front.
    this.#deferredAtMs.delete(chain);
    this.#deferredAtMs.set(chain, nowMs);
    for (const [oldest, atMs] of this.#deferredAtMs) {
      if (atMs > nowMs - this.#ttlMs) break;
      this.#deferredAtMs.delete(oldest);
    }
  }

  has(chain: string, nowMs: number): boolean {
    const atMs = this.#deferredAtMs.get(chain);
    return atMs !== undefined && atMs > nowMs - this.#ttlMs;
  }
}

import { untilAborted } from './http.js';

/** A bearer token and the moment (epoch ms) from which it should no longer be handed out. */
export interface RefreshableToken {
  token: string;
  refreshAtMs: number;
}

/**
 * One cached bearer token with single flight: until its refresh point the cached token is returned;
 * after it, concurrent callers share one fetch. The fetch runs on its own deadline, not on any
 * caller's signal (one caller giving up must not fail the others); a caller's signal only stops
 * its own wait. A failed fetch is not cached: the next call tries again.
 */
export class SingleFlightToken<T extends RefreshableToken> {
  #cached: T | undefined;
  #inFlight: Promise<T> | undefined;

  constructor(
    private readonly fetchToken: () => Promise<T>,
    private readonly now: () => number,
  ) {}

  /** The cached token while fresh, else undefined (no fetch). */
  fresh(): T | undefined {
    const cached = this.#cached;
    return cached && this.now() < cached.refreshAtMs ? cached : undefined;
  }

  async get(signal?: AbortSignal): Promise<string> {
    signal?.throwIfAborted();
    const fresh = this.fresh();
    if (fresh) return fresh.token;
    if (!this.#inFlight) {
      const pending = this.fetchToken();
      this.#inFlight = pending;
      pending
        .then(
          (token) => {
            this.#cached = token;
          },
          () => undefined,
        )
        .finally(() => {
          if (this.#inFlight === pending) this.#inFlight = undefined;
        });
    }
    return (await untilAborted(this.#inFlight, signal)).token;
  }

  /** Drops `token` if it is still the cached one; a token already replaced is left alone. */
  invalidate(token: string): void {
    if (this.#cached?.token === token) this.#cached = undefined;
  }
}

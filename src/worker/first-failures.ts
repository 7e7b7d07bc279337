/**
 * When each key first failed in this process, for `firstFailedAt` in dead-letter records. Bounded:
 * a record without it is still complete; memory is not spent on keys that later succeed.
 */
export class FirstFailures {
  readonly #times = new Map<string, string>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  note(key: string): void {
    if (this.#times.has(key)) return;
    if (this.#times.size >= this.#max) {
      const oldest = this.#times.keys().next();
      if (oldest.done !== true) this.#times.delete(oldest.value);
    }
    this.#times.set(key, new Date().toISOString());
  }

  take(key: string): string | undefined {
    if (this.#times.size === 0) return undefined;
    const at = this.#times.get(key);
    this.#times.delete(key);
    return at;
  }
}

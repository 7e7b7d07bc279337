/**
 * A first-in first-out queue on one array: taking moves a head index instead of shifting the array
 * (O(1)), and the array is emptied for reuse whenever the head catches up with the end.
 */
export class Fifo<T> {
  readonly #items: T[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** The oldest item, removed; undefined when empty. */
  shift(): T | undefined {
    if (this.#head === this.#items.length) return undefined;
    const item = this.#items[this.#head++];
    if (this.#head === this.#items.length) {
      this.#items.length = 0;
      this.#head = 0;
    }
    return item;
  }
}

/**
 * A long-lived Map whose entries come and go, holding each value in a cell that is emptied when its
 * entry leaves. V8 leaves a rehashed table behind in the old generation, still pointing at what it
 * held, and the scavenger takes those pointers as live until a major collection: held directly,
 * every value (a run, an event, and all they reach) survived that long. An emptied cell pins nothing.
 */
export class CellMap<K, V> {
  readonly #cells = new Map<K, { value: V | undefined }>();

  get size(): number {
    return this.#cells.size;
  }

  get(key: K): V | undefined {
    return this.#cells.get(key)?.value;
  }

  set(key: K, value: V): void {
    const cell = this.#cells.get(key);
    if (cell !== undefined) cell.value = value;
    else this.#cells.set(key, { value });
  }

  delete(key: K): void {
    const cell = this.#cells.get(key);
    if (cell === undefined) return;
    cell.value = undefined;
    this.#cells.delete(key);
  }

  values(): V[] {
    const values: V[] = [];
    for (const { value } of this.#cells.values()) if (value !== undefined) values.push(value);
    return values;
  }
}

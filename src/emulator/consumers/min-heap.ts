/**
 * A binary min-heap ordered by a numeric key. The consumer keeps lease deadlines and the
 * redelivery queue in heaps so every pull and ack costs O(log n), never a scan over all leases.
 * Entries are never removed from the middle: callers validate the popped entry ("lazy deletion").
 */
export class MinHeap<T> {
  private readonly keys: number[] = [];
  private readonly values: T[] = [];

  get size(): number {
    return this.keys.length;
  }

  push(key: number, value: T): void {
    this.keys.push(key);
    this.values.push(value);
    this.up(this.keys.length - 1);
  }

  peekKey(): number | undefined {
    return this.keys[0];
  }

  peek(): T | undefined {
    return this.values[0];
  }

  pop(): T | undefined {
    const size = this.keys.length;
    if (size === 0) return undefined;
    const top = this.values[0];
    const lastKey = this.keys.pop()!;
    const lastValue = this.values.pop()!;
    if (size > 1) {
      this.keys[0] = lastKey;
      this.values[0] = lastValue;
      this.down(0);
    }
    return top;
  }

  private up(index: number): void {
    const { keys, values } = this;
    const key = keys[index]!;
    const value = values[index]!;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (keys[parent]! <= key) break;
      keys[index] = keys[parent]!;
      values[index] = values[parent]!;
      index = parent;
    }
    keys[index] = key;
    values[index] = value;
  }

  private down(index: number): void {
    const { keys, values } = this;
    const size = keys.length;
    const key = keys[index]!;
    const value = values[index]!;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= size) break;
      const right = left + 1;
      const child = right < size && keys[right]! < keys[left]! ? right : left;
      if (keys[child]! >= key) break;
      keys[index] = keys[child]!;
      values[index] = values[child]!;
      index = child;
    }
    keys[index] = key;
    values[index] = value;
  }
}

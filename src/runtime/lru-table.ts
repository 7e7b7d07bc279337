/**
 * A bounded map from string keys to small records (a state, an owner, an expiry), least recently
 * used first out, laid out for a hot path: the memory store looks up every key of every batch in it.
 *
 * Why not a `Map<string, Entry>`: in a map of 100,000 keys each lookup walks a bucket chain through
 * entries and key strings scattered over the heap, a cache miss at each step, and a store did four
 * such lookups per key (a claim's miss and insert, the eviction's delete, the done mark's lookup),
 * on the path of every event. Here:
 *
 * - records live in columns (typed arrays and two string arrays) that form a ring in recency order:
 *   the oldest record at `tail`, the newest `used - 1` columns on (with holes in between);
 * - an open-addressing index (linear probing, at most half full) maps a key's 32-bit hash to its
 *   column, hash and column side by side, so a probe is one cache line; the key itself is only
 *   compared when the hashes match;
 * - touching a record appends it after the newest and leaves a hole where it was; eviction takes
 *   from `tail`, skipping holes; when the ring fills up it is compacted (or grown, up to twice the
 *   bound) in one pass, so holes cost amortised O(1).
 *
 * bench/store/memory-bound.ts measures it against a Map, with random UUID keys, full at 100,000.
 */

/** The index's mark of a free slot. Columns are stored plus one. */
const EMPTY = 0;
/** The first ring: small stores (dev, tests) never allocate for the bound. */
const INITIAL_RING = 64;

export class LruTable {
  readonly #maxEntries: number;
  /** Ring columns. A hole has key `undefined`. */
  #keys: (string | undefined)[] = [];
  #owners: string[] = [];
  #states = new Uint8Array(0);
  #expiresAt = new Float64Array(0);
  #hashes = new Int32Array(0);
  /** Index: slot i holds [hash, column + 1] at 2i, 2i + 1; EMPTY in the second means free. */
  #index = new Int32Array(0);
  #indexMask = 0;
  /** The oldest column in use, and the number of columns in use from there (records and holes). */
  #tail = 0;
  #used = 0;
  #size = 0;
  /** The last lookup's miss: where `add` of that key goes without hashing and probing again. */
  #missKey: string | undefined = undefined;
  #missHash = 0;
  #missSlot = 0;

  constructor(maxEntries: number) {
    this.#maxEntries = Math.max(1, Math.floor(maxEntries));
    this.#resize(Math.min(INITIAL_RING, 2 * this.#maxEntries), false);
  }

  /** Records held (holes excluded). */
  get size(): number {
    return this.#size;
  }

  /** The index slot of `key`, or -1. A slot is valid until the next add, touch or remove; so is a miss, for `add`. */
  lookup(key: string): number {
    const hash = hashOf(key);
    const slot = this.#probe(key, hash);
    if (slot < 0) {
      this.#missKey = key;
      this.#missHash = hash;
      this.#missSlot = ~slot;
      return -1;
    }
    return slot;
  }

  state(slot: number): number {
    return this.#states[this.#columnAt(slot)] as number;
  }

  owner(slot: number): string {
    return this.#owners[this.#columnAt(slot)] as string;
  }

  expiresAtMs(slot: number): number {
    return this.#expiresAt[this.#columnAt(slot)] as number;
  }

  /** Rewrites a record in place, keeping its recency. */
  update(slot: number, state: number, owner: string, expiresAtMs: number): void {
    const column = this.#columnAt(slot);
    this.#states[column] = state;
    this.#owners[column] = owner;
    this.#expiresAt[column] = expiresAtMs;
  }

  /** Makes the record the most recently used one. */
  touch(slot: number): void {
    this.#missKey = undefined;
    if (this.#used === this.#keys.length) {
      const column = this.#columnAt(slot);
      const key = this.#keys[column] as string;
      const hash = this.#hashes[column] as number;
      this.#makeRoom();
      slot = this.#probe(key, hash);
    }
    const column = this.#columnAt(slot);
    const key = this.#keys[column] as string;
    const owner = this.#owners[column] as string;
    this.#keys[column] = undefined;
    this.#owners[column] = '';
    this.#index[2 * slot + 1] = this.#append(key, this.#hashes[column] as number, this.#states[column] as number, owner, this.#expiresAt[column] as number) + 1;
    this.#skipHoles();
  }

  remove(slot: number): void {
    this.#missKey = undefined;
    const column = this.#columnAt(slot);
    this.#keys[column] = undefined;
    this.#owners[column] = '';
    this.#size--;
    this.#deleteSlot(slot);
    this.#skipHoles();
  }

  /**
   * Adds a record for a key that has none, as the most recently used one, then drops the least
   * recently used records beyond the bound. Call right after `lookup(key)` answered -1.
   */
  add(key: string, state: number, owner: string, expiresAtMs: number): void {
    if (this.#missKey !== key) throw new Error('LruTable.add: look the key up first');
    this.#missKey = undefined;
    const hash = this.#missHash;
    let slot = this.#missSlot;
    if (this.#used === this.#keys.length) {
      this.#makeRoom();
      slot = ~this.#probe(key, hash);
    }
    this.#index[2 * slot] = hash;
    this.#index[2 * slot + 1] = this.#append(key, hash, state, owner, expiresAtMs) + 1;
    this.#size++;
    while (this.#size > this.#maxEntries) this.#evictOldest();
  }

  clear(): void {
    this.#missKey = undefined;
    this.#resize(Math.min(INITIAL_RING, 2 * this.#maxEntries), false);
  }

  /** The slot of `key`, or the complement of the free slot where it would go. */
  #probe(key: string, hash: number): number {
    const index = this.#index;
    const mask = this.#indexMask;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const stored = index[2 * slot + 1] as number;
      if (stored === EMPTY) return ~slot;
      if (index[2 * slot] === hash && this.#keys[stored - 1] === key) return slot;
    }
  }

  #columnAt(slot: number): number {
    return (this.#index[2 * slot + 1] as number) - 1;
  }

  #append(key: string, hash: number, state: number, owner: string, expiresAtMs: number): number {
    const ring = this.#keys.length;
    const column = this.#tail + this.#used < ring ? this.#tail + this.#used : this.#tail + this.#used - ring;
    this.#used++;
    this.#keys[column] = key;
    this.#hashes[column] = hash;
    this.#states[column] = state;
    this.#owners[column] = owner;
    this.#expiresAt[column] = expiresAtMs;
    return column;
  }

  /**
   * A full ring (records and holes) before an append: grow it while it is mostly records and below
   * twice the bound, else compact it. Either frees at least one column; both move every record.
   */
  #makeRoom(): void {
    const ring = this.#keys.length;
    const grow = 2 * this.#size >= ring && ring < 2 * this.#maxEntries;
    this.#resize(grow ? Math.min(2 * ring, 2 * this.#maxEntries) : ring);
  }

  #evictOldest(): void {
    const column = this.#tail;
    this.#deleteSlot(this.#slotOfColumn(this.#hashes[column] as number, column));
    this.#keys[column] = undefined;
    this.#owners[column] = '';
    this.#size--;
    this.#skipHoles();
  }

  /** Moves the tail past holes, so it always rests on the least recently used record. */
  #skipHoles(): void {
    const ring = this.#keys.length;
    while (this.#used > 0 && this.#keys[this.#tail] === undefined) {
      this.#tail = this.#tail + 1 === ring ? 0 : this.#tail + 1;
      this.#used--;
    }
  }

  #slotOfColumn(hash: number, column: number): number {
    const mask = this.#indexMask;
    let slot = hash & mask;
    while (this.#index[2 * slot + 1] !== column + 1) slot = (slot + 1) & mask;
    return slot;
  }

  /** Backward-shift deletion: later entries of the probe run move up, so lookups need no tombstones. */
  #deleteSlot(slot: number): void {
    const index = this.#index;
    const mask = this.#indexMask;
    let hole = slot;
    for (let next = (hole + 1) & mask; index[2 * next + 1] !== EMPTY; next = (next + 1) & mask) {
      const home = (index[2 * next] as number) & mask;
      // The entry at `next` stays if its home lies cyclically in (hole, next]; else it fills the hole.
      const stays = hole <= next ? home > hole && home <= next : home > hole || home <= next;
      if (stays) continue;
      index[2 * hole] = index[2 * next] as number;
      index[2 * hole + 1] = index[2 * next + 1] as number;
      hole = next;
    }
    index[2 * hole] = 0;
    index[2 * hole + 1] = EMPTY;
  }

  /** Lays the records out again from column 0 in a ring of `ring` columns, oldest first, and rebuilds the index. */
  #resize(ring: number, keep = true): void {
    const keys = new Array<string | undefined>(ring).fill(undefined);
    const owners = new Array<string>(ring).fill('');
    const states = new Uint8Array(ring);
    const expiresAt = new Float64Array(ring);
    const hashes = new Int32Array(ring);
    let count = 0;
    if (keep) {
      const old = this.#keys.length;
      for (let i = 0; i < this.#used; i++) {
        const column = (this.#tail + i) % old;
        const key = this.#keys[column];
        if (key === undefined) continue;
        keys[count] = key;
        owners[count] = this.#owners[column] as string;
        states[count] = this.#states[column] as number;
        expiresAt[count] = this.#expiresAt[column] as number;
        hashes[count] = this.#hashes[column] as number;
        count++;
      }
    }
    let capacity = 8;
    while (capacity < 2 * Math.min(ring, this.#maxEntries)) capacity *= 2;
    this.#keys = keys;
    this.#owners = owners;
    this.#states = states;
    this.#expiresAt = expiresAt;
    this.#hashes = hashes;
    this.#index = new Int32Array(2 * capacity);
    this.#indexMask = capacity - 1;
    this.#tail = 0;
    this.#used = count;
    this.#size = count;
    for (let column = 0; column < count; column++) {
      const hash = hashes[column] as number;
      let slot = hash & this.#indexMask;
      while (this.#index[2 * slot + 1] !== EMPTY) slot = (slot + 1) & this.#indexMask;
      this.#index[2 * slot] = hash;
      this.#index[2 * slot + 1] = column + 1;
    }
  }
}

/** FNV-1a over the UTF-16 code units: cheap next to a lookup; any key format hashes well enough. */
function hashOf(key: string): number {
  let hash = 0x811c9dc5 | 0;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash;
}

import type { AckResponse, CloudEvent } from '../types.js';

/**
 * Lag of one destination as this process sees it: the highest sequence leased so far minus the
 * committed cursor reported by the last acknowledgement. Sequences are decimal strings that can
 * outgrow 2^53, so the arithmetic is BigInt (sequences increase by 1 per tenant stream).
 */
export class LagTracker {
  #lastSeen: bigint | undefined;
  #firstSeen: bigint | undefined;
  #committed: bigint | undefined;

  /** A batch was leased. */
  observeEvents(events: readonly Pick<CloudEvent, 'sequence'>[]): void {
    // A batch comes in stream order, but nothing here relies on it: the extremes are found by
    // comparing the decimal strings, and only those two become BigInts.
    let lowest: string | undefined;
    let highest: string | undefined;
    for (const { sequence } of events) {
      if (typeof sequence !== 'string' || !DECIMAL.test(sequence)) continue;
      if (lowest === undefined || compareDecimal(sequence, lowest) < 0) lowest = sequence;
      if (highest === undefined || compareDecimal(sequence, highest) > 0) highest = sequence;
    }
    this.observeSequence(lowest);
    if (highest !== lowest) this.observeSequence(highest);
  }

  observeSequence(sequence: string | undefined): void {
    const value = parseSequence(sequence);
    if (value === undefined) return;
    if (this.#lastSeen === undefined || value > this.#lastSeen) this.#lastSeen = value;
    if (this.#firstSeen === undefined || value < this.#firstSeen) this.#firstSeen = value;
  }

  /** An acknowledgement answered; `committed` is null before the first commit. */
  observeAck(response: Pick<AckResponse, 'committed'> | undefined, lastSequence?: string): void {
    this.observeSequence(lastSequence);
    const committed = parseSequence(response?.committed ?? undefined);
    // Acks from several workers can land out of order: the cursor only moves forward.
    if (committed !== undefined && (this.#committed === undefined || committed > this.#committed)) this.#committed = committed;
  }

  get committed(): bigint | undefined {
    return this.#committed;
  }

  /**
   * Events seen but not yet committed. Before the first commit everything seen counts. Never
   * negative: another replica may commit past what this one has leased.
   */
  get lag(): bigint {
    if (this.#lastSeen === undefined) return 0n;
    const base = this.#committed ?? (this.#firstSeen !== undefined ? this.#firstSeen - 1n : this.#lastSeen);
    const lag = this.#lastSeen - base;
    return lag > 0n ? lag : 0n;
  }
}

const DECIMAL = /^\d+$/;

function parseSequence(sequence: string | null | undefined): bigint | undefined {
  if (typeof sequence !== 'string' || !DECIMAL.test(sequence)) return undefined;
  return BigInt(sequence);
}

const zeroPadded = (s: string) => s.length > 1 && s.charCodeAt(0) === 48;

/** Orders two decimal strings by value. */
function compareDecimal(a: string, b: string): number {
  if (zeroPadded(a) || zeroPadded(b)) {
    const [x, y] = [BigInt(a), BigInt(b)];
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

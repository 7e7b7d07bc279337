import type { AckResponse, CloudEvent } from '../types.js';

/**
 * Lag of one destination as this process sees it: the highest sequence leased so far minus the
 * committed cursor reported by the last acknowledgement. Sequences are decimal strings that can
 * outgrow 2^53, so the arithmetic is BigInt (CONTRACT: sequences increase by 1 per tenant stream).
 */
export class LagTracker {
  #lastSeen: bigint | undefined;
  #firstSeen: bigint | undefined;
  #committed: bigint | undefined;

  /** A batch was leased. */
  observeEvents(events: readonly Pick<CloudEvent, 'sequence'>[]): void {
    for (const event of events) this.observeSequence(event.sequence);
  }

  observeSequence(sequence: string | undefined): void {
    const value = parseSequence(sequence);
    if (value === undefined) return;
    if (this.#lastSeen === undefined || value > this.#lastSeen) this.#lastSeen = value;
    if (this.#firstSeen === undefined || value < this.#firstSeen) this.#firstSeen = value;
  }

  /** An acknowledgement answered; `committed` is null before the first commit (CONTRACT). */
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

function parseSequence(sequence: string | null | undefined): bigint | undefined {
  if (typeof sequence !== 'string' || !/^\d+$/.test(sequence)) return undefined;
  return BigInt(sequence);
}

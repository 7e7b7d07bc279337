import { randomBytes } from 'node:crypto';
import { MinHeap } from './min-heap.js';

/**
 * The lease state machine of one durable consumer (spec: "Lease of a durable consumer", "Events",
 * "Limits"). Pure state: time comes in as `nowMs`, so expiry is evaluated lazily on every call and
 * never depends on a timer firing on time.
 *
 * A batch is a contiguous range of sequences. Its `leaseId` stays the same across redeliveries;
 * each delivery raises `generation` (spec: "redelivered ... with a higher generation") and
 * `attempt` (decision: attempt counts deliveries of the batch, so an expired lease raises it as
 * well as a failed ack — a batch that crashes its worker reaches --max-attempts too).
 */

/** Spec, Limits: "Leased and unacknowledged events: at most 1,000". */
export const MAX_IN_FLIGHT_EVENTS = 1000;
/** Recently committed leases remembered so a retried `ok` ack answers `committed` again. */
const RETIRED_LEASES_REMEMBERED = 10_000;

export interface ConsumerEvents {
  /** Sequence of the newest event of the tenant stream (0 when empty). */
  readonly head: number;
  /** JSON texts of the events `first..last` inclusive, in stream order. */
  slice(first: number, last: number): string[];
}

export interface PullRequest {
  limit: number;
  visibilitySeconds: number;
  /** undefined = the shared anonymous identity (spec: "pulls without it share one identity"). */
  workerId: string | undefined;
}

export interface Lease {
  leaseId: string;
  generation: number;
  attempt: number;
  /** The events as JSON texts, in stream order (the route concatenates them). */
  eventsJson: string[];
}

export type PullResult = { kind: 'lease'; lease: Lease } | { kind: 'caught-up' } | { kind: 'paused' } | { kind: 'full'; retryAfterSeconds: number };

export type AckResult = { kind: 'answer'; status: 'committed' | 'requeued' | 'stale'; committed: string | null } | { kind: 'unknown-lease' };

interface Batch {
  readonly leaseId: string;
  readonly first: number;
  readonly last: number;
  generation: number;
  attempt: number;
  state: 'leased' | 'pending';
  /** Worker key while leased. */
  holder: string | undefined;
  deadlineMs: number;
  /** Set when a `failed` ack of this generation requeued it (a retried identical ack answers the same). */
  requeuedGeneration: number | undefined;
}

export interface ConsumerSummary {
  paused: boolean;
  /** Sequence the consumer started after (the stream head when it was created). */
  startedAfter: string;
  committed: string | null;
  /** Events in leases currently held by workers. */
  leased: number;
  /** Events of expired or failed batches waiting for redelivery. */
  pendingRedelivery: number;
  /** Sequence of the next event never handed out. */
  next: string;
  /** The leases held right now, oldest batch first. */
  leases: HeldLease[];
}

/** A lease a worker holds (`GET /_emulator/state`: the lease table of a development console). */
export interface HeldLease {
  leaseId: string;
  /** The pull's `workerId`; null for pulls without one (they share one identity). */
  workerId: string | null;
  generation: number;
  attempt: number;
  /** First and last sequence of the batch. */
  firstSequence: string;
  lastSequence: string;
  /** When the lease expires unless acknowledged (ISO 8601). */
  expiresAt: string;
}

const ANONYMOUS_WORKER = '';

export class DurableConsumer {
  private readonly tag = randomBytes(6).toString('hex');
  private readonly startedAfter: number;
  private nextNew: number;
  private committedThrough: number;
  private paused = false;
  private leaseCounter = 0;
  private inFlightEvents = 0;
  private leasedEvents = 0;
  private readonly batches = new Map<string, Batch>();
  private readonly byWorker = new Map<string, Batch>();
  private readonly deadlines = new MinHeap<{ batch: Batch; deadlineMs: number }>();
  private readonly redeliveries = new MinHeap<Batch>();
  /** Acknowledged ranges beyond the cursor: first sequence -> last sequence. */
  private readonly ackedAhead = new Map<number, number>();
  private readonly retired = new Map<string, number>();

  constructor(private readonly stream: ConsumerEvents) {
    // Spec: "the consumer starts at the head of the stream when created and earlier events are never handed out".
    this.startedAfter = stream.head;
    this.nextNew = stream.head + 1;
    this.committedThrough = stream.head;
  }

  /** Highest sequence every batch up to which has been acknowledged `ok`. */
  get committedSequence(): number {
    return this.committedThrough;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  setPaused(paused: boolean): void {
    this.paused = paused;
  }

  pull(request: PullRequest, nowMs: number): PullResult {
    this.expireDue(nowMs);
    // Spec: "any | pull | consumer paused | unchanged | 409".
    if (this.paused) return { kind: 'paused' };
    const worker = request.workerId ?? ANONYMOUS_WORKER;
    const visibilityMs = request.visibilitySeconds * 1000;

    // Spec: "pull by the same worker | worker still holds the lease | leased (same lease returned)".
    // "The earlier batch is treated as abandoned": the worker starts it over, so the visibility
    // window restarts from this pull; leaseId, generation, attempt and events are unchanged.
    const held = this.byWorker.get(worker);
    if (held !== undefined) {
      this.setDeadline(held, nowMs + visibilityMs);
      return { kind: 'lease', lease: this.leaseOf(held) };
    }

    // Spec: "Expired and failed leases are redelivered before new work, with a higher generation".
    const redelivery = this.nextRedelivery();
    if (redelivery !== undefined) {
      const batch = this.splitToLimit(redelivery, request.limit);
      batch.generation += 1;
      batch.attempt += 1;
      batch.requeuedGeneration = undefined;
      this.lease(batch, worker, nowMs + visibilityMs);
      return { kind: 'lease', lease: this.leaseOf(batch) };
    }

    // Spec: "any | pull | 1,000 events leased and unacknowledged | unchanged | 429". Checked before
    // "caught up" so a full window answers 429 even when no newer event exists.
    if (this.inFlightEvents >= MAX_IN_FLIGHT_EVENTS) {
      return { kind: 'full', retryAfterSeconds: this.secondsUntilNextExpiry(nowMs) };
    }
    const available = this.stream.head - this.nextNew + 1;
    if (available <= 0) return { kind: 'caught-up' };

    // Never more than `limit`, and never past the 1,000-event window ("at most 1,000").
    const size = Math.min(request.limit, available, MAX_IN_FLIGHT_EVENTS - this.inFlightEvents);
    const batch: Batch = {
      leaseId: `${this.tag}-${(++this.leaseCounter).toString(36)}`,
      first: this.nextNew,
      last: this.nextNew + size - 1,
      generation: 1,
      attempt: 1,
      state: 'pending',
      holder: undefined,
      deadlineMs: 0,
      requeuedGeneration: undefined,
    };
    this.nextNew += size;
    this.inFlightEvents += size;
    this.batches.set(batch.leaseId, batch);
    this.lease(batch, worker, nowMs + visibilityMs);
    return { kind: 'lease', lease: this.leaseOf(batch) };
  }

  /**
   * Decisions where the spec is silent:
   * - "lease current" = the acked generation is the latest delivery of the batch. An expired lease
   *   not yet handed to anyone else is still current: its ack is honoured (saves a redelivery).
   *   Once redelivered (higher generation), acks of the older generation are `stale`.
   * - A retried identical ack answers the recorded outcome (`committed` / `requeued`), so a client
   *   retrying after a lost response is safe; a conflicting second ack is `stale`.
   * - A generation never issued is `stale`. A lease id this consumer never issued is unknown (404).
   */
  acknowledge(leaseId: string, generation: number, status: 'ok' | 'failed', nowMs: number): AckResult {
    this.expireDue(nowMs);
    const batch = this.batches.get(leaseId);
    if (batch === undefined) {
      const retiredGeneration = this.retired.get(leaseId);
      if (retiredGeneration !== undefined && retiredGeneration === generation && status === 'ok') {
        return this.answer('committed');
      }
      return this.issuedHere(leaseId) ? this.answer('stale') : { kind: 'unknown-lease' };
    }
    if (generation !== batch.generation) return this.answer('stale');
    if (batch.requeuedGeneration === generation) {
      return this.answer(status === 'failed' ? 'requeued' : 'stale');
    }
    if (status === 'failed') {
      // Spec: "acknowledge failed | lease current | requeued | batch redelivered with a higher attempt".
      const wasLeased = batch.state === 'leased';
      this.release(batch);
      batch.requeuedGeneration = generation;
      // An expired batch is already queued for redelivery; queue it once.
      if (wasLeased) this.queueRedelivery(batch);
      return this.answer('requeued');
    }
    this.release(batch);
    this.batches.delete(batch.leaseId);
    this.inFlightEvents -= batch.last - batch.first + 1;
    this.remember(batch.leaseId, generation);
    this.commitRange(batch.first, batch.last);
    return this.answer('committed');
  }

  summary(nowMs: number): ConsumerSummary {
    this.expireDue(nowMs);
    return {
      paused: this.paused,
      startedAfter: String(this.startedAfter),
      committed: this.committedWire(),
      leased: this.leasedEvents,
      pendingRedelivery: this.inFlightEvents - this.leasedEvents,
      next: String(this.nextNew),
      leases: this.heldLeases(),
    };
  }

  /** One entry per worker holding a batch: at most one per workerId, so a short list. */
  private heldLeases(): HeldLease[] {
    const held = [...this.byWorker.values()].sort((a, b) => a.first - b.first);
    return held.map((batch) => ({
      leaseId: batch.leaseId,
      workerId: batch.holder === ANONYMOUS_WORKER || batch.holder === undefined ? null : batch.holder,
      generation: batch.generation,
      attempt: batch.attempt,
      firstSequence: String(batch.first),
      lastSequence: String(batch.last),
      expiresAt: new Date(batch.deadlineMs).toISOString(),
    }));
  }

  /** Moves every lease whose deadline passed to the redelivery queue (spec: lease expiry -> redelivered). */
  expireDue(nowMs: number): void {
    for (;;) {
      const deadlineMs = this.deadlines.peekKey();
      if (deadlineMs === undefined || deadlineMs > nowMs) return;
      const entry = this.deadlines.pop()!;
      const batch = entry.batch;
      // Lazy deletion: the entry is void if the batch was acked, re-leased or its deadline moved.
      if (batch.state !== 'leased' || batch.deadlineMs !== entry.deadlineMs || this.batches.get(batch.leaseId) !== batch) continue;
      this.release(batch);
      this.queueRedelivery(batch);
    }
  }

  private answer(status: 'committed' | 'requeued' | 'stale'): AckResult {
    return { kind: 'answer', status, committed: this.committedWire() };
  }

  /** Spec: `committed` is null before the first commit. */
  private committedWire(): string | null {
    return this.committedThrough > this.startedAfter ? String(this.committedThrough) : null;
  }

  private lease(batch: Batch, worker: string, deadlineMs: number): void {
    batch.state = 'leased';
    batch.holder = worker;
    this.byWorker.set(worker, batch);
    this.leasedEvents += batch.last - batch.first + 1;
    this.setDeadline(batch, deadlineMs);
  }

  private setDeadline(batch: Batch, deadlineMs: number): void {
    batch.deadlineMs = deadlineMs;
    this.deadlines.push(deadlineMs, { batch, deadlineMs });
  }

  /** Leaves the leased state (ack, failure or expiry); the batch may still be in flight. */
  private release(batch: Batch): void {
    if (batch.state !== 'leased') return;
    if (batch.holder !== undefined && this.byWorker.get(batch.holder) === batch) this.byWorker.delete(batch.holder);
    batch.holder = undefined;
    batch.state = 'pending';
    this.leasedEvents -= batch.last - batch.first + 1;
  }

  private queueRedelivery(batch: Batch): void {
    // Lowest sequence first: redelivering the oldest batch first lets the cursor move soonest.
    this.redeliveries.push(batch.first, batch);
  }

  private nextRedelivery(): Batch | undefined {
    for (;;) {
      const batch = this.redeliveries.peek();
      if (batch === undefined) return undefined;
      if (batch.state === 'pending' && this.batches.get(batch.leaseId) === batch && this.redeliveries.peekKey() === batch.first) {
        this.redeliveries.pop();
        return batch;
      }
      this.redeliveries.pop();
    }
  }

  /**
   * A batch redelivered to a pull with a smaller `limit` is split: the head keeps the lease id and
   * goes out now; the tail becomes its own pending batch (same generation and attempt counts) so a
   * batch never exceeds the caller's `limit`.
   */
  private splitToLimit(batch: Batch, limit: number): Batch {
    const size = batch.last - batch.first + 1;
    if (size <= limit) return batch;
    const tail: Batch = {
      leaseId: `${this.tag}-${(++this.leaseCounter).toString(36)}`,
      first: batch.first + limit,
      last: batch.last,
      generation: batch.generation,
      attempt: batch.attempt,
      state: 'pending',
      holder: undefined,
      deadlineMs: 0,
      requeuedGeneration: undefined,
    };
    const head: Batch = { ...batch, last: batch.first + limit - 1 };
    this.batches.set(head.leaseId, head);
    this.batches.set(tail.leaseId, tail);
    this.queueRedelivery(tail);
    return head;
  }

  private leaseOf(batch: Batch): Lease {
    return {
      leaseId: batch.leaseId,
      generation: batch.generation,
      attempt: batch.attempt,
      eventsJson: this.stream.slice(batch.first, batch.last),
    };
  }

  /** Spec: "the committed cursor advances only over a contiguous run of acknowledged batches". */
  private commitRange(first: number, last: number): void {
    if (first !== this.committedThrough + 1) {
      this.ackedAhead.set(first, last);
      return;
    }
    this.committedThrough = last;
    for (;;) {
      const next = this.ackedAhead.get(this.committedThrough + 1);
      if (next === undefined) return;
      this.ackedAhead.delete(this.committedThrough + 1);
      this.committedThrough = next;
    }
  }

  private remember(leaseId: string, generation: number): void {
    this.retired.set(leaseId, generation);
    if (this.retired.size > RETIRED_LEASES_REMEMBERED) {
      const oldest = this.retired.keys().next().value;
      if (oldest !== undefined) this.retired.delete(oldest);
    }
  }

  private issuedHere(leaseId: string): boolean {
    const prefix = `${this.tag}-`;
    if (!leaseId.startsWith(prefix)) return false;
    const counter = Number.parseInt(leaseId.slice(prefix.length), 36);
    return Number.isInteger(counter) && counter >= 1 && counter <= this.leaseCounter && counter.toString(36) === leaseId.slice(prefix.length);
  }

  private secondsUntilNextExpiry(nowMs: number): number {
    // Retry-After (spec: integer seconds, minimum 1): when the earliest lease can expire and free room.
    let earliest: number | undefined;
    for (;;) {
      const entry = this.deadlines.peek();
      if (entry === undefined) break;
      const batch = entry.batch;
      if (batch.state === 'leased' && batch.deadlineMs === entry.deadlineMs && this.batches.get(batch.leaseId) === batch) {
        earliest = entry.deadlineMs;
        break;
      }
      this.deadlines.pop();
    }
    if (earliest === undefined) return 1;
    return Math.max(1, Math.ceil((earliest - nowMs) / 1000));
  }
}

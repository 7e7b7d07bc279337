import { CellMap } from '../runtime/cell-map.js';

/**
 * An event in its subject's chain: the events of one subject the process holds, in arrival order,
 * linked both ways. Only the first one of a chain may run.
 */
export interface ChainedEvent<E> {
  readonly subject: string;
  readonly eventId: string;
  /** What acks the event (its lease): a fence set by the event lifts after that ack. */
  readonly holder: unknown;
  prevInSubject: E | undefined;
  nextInSubject: E | undefined;
}

/** A subject whose events must not run until the failed event `eventId` can run first again. */
interface Fence {
  eventId: string;
  holder: unknown;
  /** When the holder's ack was answered (or, when it got none, its lease expires): undefined until then. */
  releaseAtMs: number | undefined;
}

/** Where an event stands on entering: it may run, it waits behind an earlier one, or its subject is fenced. */
export type Entry = 'ready' | 'waiting' | 'fenced';

/**
 * Subject order across every lease the process holds (CONTRACT --concurrency: events with the same
 * subject stay in order). An event waits behind every earlier-arrived event of its subject; when
 * one ends without settling (failed, or left unstarted), the events behind it do not run, and the
 * subject is fenced: events of it that arrive later do not run either, until
 *
 * - a lease arrives that holds the failed event again (its redelivery: it runs first), or
 * - a lease arrives from a pull sent after the failed event's lease was acked (after it expired, when
 *   the ack got no answer): the spec redelivers failed and expired leases before new work, so a pull
 *   sent then that did not bring it back means another worker has it.
 *
 * So a later update of an entry never overtakes an earlier one that is being retried (with one
 * replica). Index-free and callback-free: the caller links its own event objects; this keeps the
 * chains' tails and the fences. See docs/architecture.md, "Subject order across leases".
 */
export class SubjectOrder<E extends ChainedEvent<E>> {
  /** Subject -> the last event of its chain. Cells: subjects come and go with every event. */
  readonly #tails = new CellMap<string, E>();
  readonly #fences = new Map<string, Fence>();

  /** Subjects fenced now (for tests and the summary). */
  get fenced(): number {
    return this.#fences.size;
  }

  /**
   * Before a lease's events enter: lifts the fences it resolves (it holds the failed event again,
   * or its pull was sent after the failed event's lease was released).
   */
  admitLease(holds: (eventId: string) => boolean, pullSentAtMs: number): void {
    if (this.#fences.size === 0) return;
    for (const [subject, fence] of this.#fences) {
      if (holds(fence.eventId) || (fence.releaseAtMs !== undefined && pullSentAtMs > fence.releaseAtMs)) this.#fences.delete(subject);
    }
  }

  /** Enters an event at the end of its subject's chain. A fenced event is not linked: it must end unstarted. */
  enter(event: E): Entry {
    if (this.#fences.size > 0 && this.#fences.has(event.subject)) return 'fenced';
    const tail = this.#tails.get(event.subject);
    this.#tails.set(event.subject, event);
    if (tail === undefined) return 'ready';
    tail.nextInSubject = event;
    event.prevInSubject = tail;
    return 'waiting';
  }

  /** The first event of a chain settled: returns the next one, now first (it may run). */
  settled(event: E): E | undefined {
    const next = event.nextInSubject;
    event.nextInSubject = undefined;
    if (next !== undefined) next.prevInSubject = undefined;
    else if (this.#tails.get(event.subject) === event) this.#tails.delete(event.subject);
    return next;
  }

  /**
   * An event ended without settling (failed, or left unstarted). The events behind it must not run:
   * they are unlinked and returned, for the caller to end unstarted (`broken` is not called for
   * them). With `fence`, the subject is fenced at this event (a drain needs no fence: nothing is
   * pulled after it). A new fence replaces an older one: the event is earlier, as every event of
   * the subject still linked arrived before the older fence was set.
   */
  broken(event: E, fence: boolean): E[] {
    const dropped: E[] = [];
    for (let next = event.nextInSubject; next !== undefined; ) {
      const after: E | undefined = next.nextInSubject;
      next.prevInSubject = next.nextInSubject = undefined;
      dropped.push(next);
      next = after;
    }
    const prev = event.prevInSubject;
    event.prevInSubject = event.nextInSubject = undefined;
    if (prev !== undefined) {
      prev.nextInSubject = undefined;
      this.#tails.set(event.subject, prev);
    } else this.#tails.delete(event.subject);
    if (fence) this.#fences.set(event.subject, { eventId: event.eventId, holder: event.holder, releaseAtMs: undefined });
    return dropped;
  }

  /** The ack of `holder` was answered (or its lease expires) at `atMs`: its fences lift with the next pull sent after it. */
  released(holder: unknown, atMs: number): void {
    if (this.#fences.size === 0) return;
    for (const fence of this.#fences.values()) if (fence.holder === holder) fence.releaseAtMs = atMs;
  }
}

import { CellMap } from '../runtime/cell-map.js';
import { compareSequences } from '../runtime/sequence.js';

/**
 * An event in its subject's chain: the events of one subject the process holds, in arrival order,
 * linked both ways. Only the first one of a chain may run.
 */
export interface ChainedEvent<E> {
  readonly subject: string;
  readonly eventId: string;
  /** Its place in the stream (decimal string). */
  readonly sequence: string;
  /** What acks the event (its lease): a fence set by the event lifts after that ack. */
  readonly holder: unknown;
  /** Its place in the chain, kept by SubjectOrder (the event only reads it). */
  readonly subjectLink: SubjectLink<E>;
}

/** An event's place in its subject's chain: written by SubjectOrder alone, read by the event and its scheduler. */
export class SubjectLink<E> {
  prev: E | undefined = undefined;
  next: E | undefined = undefined;
  /** In its chain: entered (ready or waiting) and neither settled nor broken since. */
  linked = false;
}

/**
 * An event of a fenced subject that this process let go without running it (failed, or left
 * unstarted): its lease is acked `failed`, so it comes back, here or to another worker.
 */
interface Missing {
  sequence: string;
  holder: unknown;
  /** When the holder's ack was answered (or, when it got none, its lease expires): undefined until then. */
  releaseAtMs: number | undefined;
}

/** Where an event stands on entering: it may run, it waits behind an earlier one, or its subject is fenced. */
export type Entry = 'ready' | 'waiting' | 'fenced';

/**
 * Subject order across every lease the process holds (`--concurrency` promises that events with the
 * same subject stay in order, docs/configuration.md). An event waits behind every earlier-arrived event of its subject; when
 * one ends without settling (failed, or left unstarted), the events behind it do not run, and the
 * subject is fenced: it keeps the events it let go (**missing**: they come back, their leases acked
 * `failed`), and an arriving event of the subject runs only when no missing event comes before it
 * in the stream; one that does not is let go too (it becomes missing). A missing event stops being
 * missing when
 *
 * - a lease arrives that holds it again (its redelivery: it runs in order), or
 * - a lease of new work (first attempt) arrives from a pull sent after its lease was acked (after it
 *   expired, when the ack got no answer), every earlier pull answered: the spec redelivers failed
 *   and expired leases before new work, so new work handed out then, with no earlier answer still
 *   on its way, means its lease was handed out, and not to us: another worker has it. A redelivered
 *   lease proves nothing (the process holds several leases, requeued together: a later one can
 *   come back first), nor does new work while an earlier pull, which may bring it back, is
 *   unanswered; or
 * - its lease was released longer ago than a lease lasts (`--visibility`): pulled since by this
 *   process or another, it was handed out by now. This keeps a subject from being fenced for good
 *   when no new work comes and the event went elsewhere (each process letting the other's events go).
 *
 * So a later update of an entry never overtakes an earlier one that is being retried (with one
 * replica), even when several leases of it were requeued. Index-free and callback-free: the caller
 * links its own event objects; this keeps the chains' tails and the fences. See
 * docs/architecture.md, "Subject order across leases".
 */
export class SubjectOrder<E extends ChainedEvent<E>> {
  /** Subject -> the last event of its chain. Cells: subjects come and go with every event. */
  readonly #tails = new CellMap<string, E>();
  /** Fenced subject -> its missing events, by id. */
  readonly #fences = new Map<string, Map<string, Missing>>();

  /** Subjects fenced now (for tests and the summary). */
  get fenced(): number {
    return this.#fences.size;
  }

  /**
   * Before a lease's events enter: what it holds is no longer missing, nor, for new work pulled
   * after their leases were released with every earlier pull answered (`newWorkPulledAtMs`,
   * undefined for any other lease), is what went to another worker, nor what was released before
   * `releasedBeforeMs` (a lease's length ago). A subject with nothing missing is no longer fenced.
   */
  admitLease(holds: (eventId: string) => boolean, newWorkPulledAtMs: number | undefined, releasedBeforeMs = Number.NEGATIVE_INFINITY): void {
    if (this.#fences.size === 0) return;
    /** Released, and since handed out elsewhere: new work came after it, or a lease's length passed. */
    const goneElsewhere = (releasedAtMs: number | undefined) =>
      releasedAtMs !== undefined && ((newWorkPulledAtMs !== undefined && newWorkPulledAtMs > releasedAtMs) || releasedAtMs < releasedBeforeMs);
    for (const [subject, missing] of this.#fences) {
      for (const [eventId, m] of missing) if (holds(eventId) || goneElsewhere(m.releaseAtMs)) missing.delete(eventId);
      if (missing.size === 0) this.#fences.delete(subject);
    }
  }

  /**
   * Enters an event at the end of its subject's chain. In a fenced subject, an event that a missing
   * one comes before is not linked: it must end unstarted, and it is missing from then on.
   */
  enter(event: E): Entry {
    if (this.#fences.size > 0) {
      const missing = this.#fences.get(event.subject);
      if (missing !== undefined && this.#missesEarlier(missing, event.sequence)) {
        missing.set(event.eventId, { sequence: event.sequence, holder: event.holder, releaseAtMs: undefined });
        return 'fenced';
      }
    }
    const tail = this.#tails.get(event.subject);
    this.#tails.set(event.subject, event);
    event.subjectLink.linked = true;
    if (tail === undefined) return 'ready';
    tail.subjectLink.next = event;
    event.subjectLink.prev = tail;
    return 'waiting';
  }

  #missesEarlier(missing: Map<string, Missing>, sequence: string): boolean {
    for (const m of missing.values()) if (compareSequences(m.sequence, sequence) < 0) return true;
    return false;
  }

  /** The first event of a chain settled: returns the next one, now first (it may run). */
  settled(event: E): E | undefined {
    const link = event.subjectLink;
    const next = link.next;
    link.next = undefined;
    link.linked = false;
    if (next !== undefined) next.subjectLink.prev = undefined;
    else if (this.#tails.get(event.subject) === event) this.#tails.delete(event.subject);
    return next;
  }

  /**
   * An event ended without settling (failed, or left unstarted). The events behind it must not run:
   * they are unlinked and returned, for the caller to end unstarted (`broken` is not called for
   * them). With `fence`, the subject is fenced with all of them missing (a drain needs no fence:
   * nothing is pulled after it).
   */
  broken(event: E, fence: boolean): E[] {
    const dropped: E[] = [];
    for (let next = event.subjectLink.next; next !== undefined;) {
      const link = next.subjectLink;
      const after: E | undefined = link.next;
      link.prev = link.next = undefined;
      link.linked = false;
      dropped.push(next);
      next = after;
    }
    const link = event.subjectLink;
    const prev = link.prev;
    link.prev = link.next = undefined;
    link.linked = false;
    if (prev !== undefined) {
      prev.subjectLink.next = undefined;
      this.#tails.set(event.subject, prev);
    } else this.#tails.delete(event.subject);
    if (fence) {
      let missing = this.#fences.get(event.subject);
      if (missing === undefined) this.#fences.set(event.subject, (missing = new Map()));
      for (const e of [event, ...dropped]) missing.set(e.eventId, { sequence: e.sequence, holder: e.holder, releaseAtMs: undefined });
    }
    return dropped;
  }

  /** The ack of `holder` was answered (or its lease expires) at `atMs`: its missing events may be found elsewhere by a pull sent after it. */
  released(holder: unknown, atMs: number): void {
    if (this.#fences.size === 0) return;
    for (const missing of this.#fences.values()) for (const m of missing.values()) if (m.holder === holder) m.releaseAtMs = atMs;
  }
}

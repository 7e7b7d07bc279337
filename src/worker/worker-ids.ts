import { ReusableTimeoutSignal } from '../runtime/reusable-timeout-signal.js';
import { backoffMs } from './timing.js';

/** A pull cycle that crashed (a bug) rests its workerId this long at first, doubling up to the ceiling. */
const RESTART_BASE_MS = 1_000;
const RESTART_MAX_MS = 30_000;
/** A workerId that pulled fine this long after its last crash starts its back-off afresh. */
const HEALTHY_RUN_MS = 60_000;

/** One workerId of the process's pool: at most one lease at a time (spec: one lease per workerId). */
export class WorkerSlot {
  readonly id: string;
  readonly index: number;
  /** The acks of one id go one after another: one reusable timeout signal serves them all. */
  readonly ackTimeout = new ReusableTimeoutSignal();
  /** From its pull being sent until its lease's ack is answered (or the pull's answer brought none). */
  busy = false;
  /** Pulled with since the process started. */
  pulled = false;
  #restingUntilMs = 0;
  #crashes = 0;

  constructor(prefix: string, index: number) {
    this.index = index;
    this.id = `${prefix}-${index}`;
  }

  /** After a crash of its pull cycle: not used again before this time (epoch ms). */
  get restingUntilMs(): number {
    return this.#restingUntilMs;
  }

  /** Crashes in a row (a healthy run resets it): the restart back-off grows with them. */
  get crashes(): number {
    return this.#crashes;
  }

  /**
   * Its pull cycle crashed (a bug): it rests, and this says for how long: a back-off that doubles
   * with its crashes in a row, started afresh after a healthy run.
   */
  restAfterCrash(nowMs: number): number {
    this.#crashes = nowMs - this.#restingUntilMs > HEALTHY_RUN_MS ? 1 : this.#crashes + 1;
    const restartInMs = Math.max(RESTART_BASE_MS / 2, backoffMs(this.#crashes, RESTART_BASE_MS, RESTART_MAX_MS));
    this.#restingUntilMs = nowMs + restartInMs;
    return restartInMs;
  }
}

/**
 * The workerIds of the process, `<prefix>-0` … `<prefix>-(size - 1)` (stable workerIds
 * `<worker-id-prefix>-<index>`, docs/configuration.md). Ids not pulled with since start go first, lowest index first, so
 * that a restarted process pulls every id of its pool early and gets back at once each lease it held
 * before (spec: a pull by a worker that still holds a lease returns that lease); then the lowest free
 * id, so that a quiet process keeps using the same few.
 */
export class WorkerIdPool {
  readonly slots: readonly WorkerSlot[];
  #notPulled: number;
  #busy = 0;

  constructor(prefix: string, size: number) {
    this.slots = Array.from({ length: size }, (_, index) => new WorkerSlot(prefix, index));
    this.#notPulled = size;
  }

  /** Ids taken (a pull or a lease on them). */
  get busy(): number {
    return this.#busy;
  }

  /** Every id has been pulled with since start (a restart got back whatever it held). */
  get allPulled(): boolean {
    return this.#notPulled === 0;
  }

  /** Ids not pulled with since start. */
  get notPulled(): number {
    return this.#notPulled;
  }

  /** Takes a free id for a pull, or undefined when none is free (or all free ones rest after a crash). */
  take(nowMs: number): WorkerSlot | undefined {
    let lowestFree: WorkerSlot | undefined;
    for (const slot of this.slots) {
      if (slot.busy || slot.restingUntilMs > nowMs) continue;
      if (!slot.pulled) return this.#use(slot);
      lowestFree ??= slot;
      if (this.#notPulled === 0) break;
    }
    return lowestFree === undefined ? undefined : this.#use(lowestFree);
  }

  release(slot: WorkerSlot): void {
    if (!slot.busy) return;
    slot.busy = false;
    this.#busy--;
  }

  #use(slot: WorkerSlot): WorkerSlot {
    slot.busy = true;
    this.#busy++;
    if (!slot.pulled) {
      slot.pulled = true;
      this.#notPulled--;
    }
    return slot;
  }
}

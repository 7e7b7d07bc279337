import type { EmulatorStateSummary } from '../emulator/summary.js';
import type { ConsumerView, LagPoint } from './protocol.js';

/** The emulator is read this often: the lease countdowns and the lag chart move every second. */
export const SAMPLE_INTERVAL_MS = 1_000;
/** Lag points kept: ten minutes at one a second. */
export const LAG_HISTORY_POINTS = 600;

export interface ConsumerWatchOptions {
  destination: string;
  tenant: string;
  readState: () => Promise<EmulatorStateSummary>;
  onSample: (view: ConsumerView) => void;
  intervalMs?: number;
  now?: () => number;
}

/** head - committed, counting from where the consumer started before its first commit. */
function lagOf(consumer: EmulatorStateSummary['tenants'][number]['consumers'][number]): number {
  const head = BigInt(consumer.head ?? '0');
  const done = BigInt(consumer.committed ?? consumer.startedAfter);
  return Number(head > done ? head - done : 0n);
}

/** The consumer's state in the emulator, sampled every second, with the lag history of the last minutes. */
export class ConsumerWatch {
  readonly #options: ConsumerWatchOptions;
  readonly #now: () => number;
  readonly #history: LagPoint[] = [];
  #latest: ConsumerView;
  #timer: NodeJS.Timeout | undefined;
  /** The sample on its way, if any. */
  #sampling: Promise<ConsumerView> | undefined;

  constructor(options: ConsumerWatchOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#latest = this.#unreachable('not read yet');
  }

  get latest(): ConsumerView {
    return this.#latest;
  }

  get history(): LagPoint[] {
    return [...this.#history];
  }

  start(): void {
    if (this.#timer !== undefined) return;
    void this.sample();
    this.#timer = setInterval(() => void this.sample(), this.#options.intervalMs ?? SAMPLE_INTERVAL_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * One sample read after this call (also after the page changed something, so it shows at once).
   * A sample already on its way may have read the state before the caller's change: it is waited
   * for, then the state is read again. Never rejects.
   */
  async sample(): Promise<ConsumerView> {
    while (this.#sampling !== undefined) await this.#sampling;
    this.#sampling = this.#read();
    try {
      return await this.#sampling;
    } finally {
      this.#sampling = undefined;
    }
  }

  async #read(): Promise<ConsumerView> {
    try {
      this.#latest = this.#view(await this.#options.readState());
      if (this.#latest.reachable) {
        this.#history.push({ at: this.#latest.at, lag: this.#latest.lag });
        if (this.#history.length > LAG_HISTORY_POINTS) this.#history.shift();
      }
    } catch (err) {
      this.#latest = this.#unreachable(err instanceof Error ? err.message : String(err));
    }
    this.#options.onSample(this.#latest);
    return this.#latest;
  }

  #view(state: EmulatorStateSummary): ConsumerView {
    const { destination, tenant } = this.#options;
    const consumer = state.tenants.find((t) => t.id === tenant)?.consumers.find((c) => c.id === destination);
    if (consumer === undefined) return this.#unreachable(`the emulator has no durable consumer ${destination} in tenant ${tenant}`);
    return {
      at: this.#now(),
      destination,
      reachable: true,
      paused: consumer.paused,
      head: consumer.head,
      committed: consumer.committed,
      lag: lagOf(consumer),
      leased: consumer.leased,
      pendingRedelivery: consumer.pendingRedelivery,
      leases: consumer.leases ?? [],
      faults: state.faults as Record<string, unknown>,
    };
  }

  #unreachable(error: string): ConsumerView {
    const { destination } = this.#options;
    return {
      at: this.#now(),
      destination,
      reachable: false,
      error,
      paused: false,
      head: null,
      committed: null,
      lag: 0,
      leased: 0,
      pendingRedelivery: 0,
      leases: [],
      faults: {},
    };
  }
}

/**
 * The asynchronous side of ingest (spec: "A `202` means the batch was queued, not that it is
 * visible in reads"; "Reads reflect completed ingestion only"). Jobs are applied on a later turn of
 * the event loop, every job queued by then in one go, in order; `idle()` resolves once nothing is
 * left.
 */
export class ApplyQueue<TJob> {
  private jobs: TJob[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  private waiters: Array<() => void> = [];
  private closed = false;

  constructor(
    private readonly apply: (job: TJob) => void,
    private readonly onError: (err: unknown) => void,
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  get pending(): number {
    return this.jobs.length;
  }

  push(job: TJob): void {
    if (this.closed) throw new Error('the apply queue is closed');
    this.jobs.push(job);
    this.scheduled ??= setImmediate(() => this.drain());
  }

  idle(): Promise<void> {
    if (this.jobs.length === 0 && this.scheduled === undefined) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Drops jobs not yet applied and releases every `idle()` waiter. Idempotent. */
  close(): void {
    this.closed = true;
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    this.jobs = [];
    this.release();
  }

  private drain(): void {
    this.scheduled = undefined;
    const batch = this.jobs;
    this.jobs = [];
    for (const job of batch) {
      try {
        this.apply(job);
      } catch (err) {
        this.onError(err);
      }
    }
    // Jobs queued by the applied ones (none today) get their own turn.
    if (this.jobs.length > 0) this.scheduled = setImmediate(() => this.drain());
    else this.release();
  }

  private release(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}

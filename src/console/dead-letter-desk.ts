import type { DeadLetterPage, DeadLetters, ReplayReport } from '../dead-letter-admin/api.js';
import type { ReplayResult } from '../dead-letter-admin/replay.js';
import type { ReplayRunOptions } from '../dead-letter-admin/replay-resources.js';
import type { DeadLetterState, StoredDeadLetter } from '../dead-letter/sink.js';
import { HttpProblem } from '../emulator/http/problem.js';
import { ErrorCodes, hasCode } from '../errors.js';

export interface DeadLetterDeskOptions {
  /** Opens the worker's sink through `openDeadLetters` (the API of `durable-worker dead-letters`). */
  open: () => Promise<DeadLetters>;
  /** How a replay runs handlers: the worker's options (handlers folder, idempotency store, timeouts). */
  replay: Omit<ReplayRunOptions, 'isolation' | 'signal'>;
  /** Each replayed record's outcome (the Events page shows it as a run). */
  onResult: (result: ReplayResult) => void;
  /** After a replay or a purge changed records. */
  onChange: () => void;
}

/**
 * The Dead letters page's side of the sink: list, replay and purge, through the same API as the
 * `durable-worker dead-letters` command. A replay runs the handler modules as they are on disk now,
 * so it always runs in worker threads, whatever the worker's `--isolation`: a module imported in
 * this process stays cached for its lifetime, while new threads import the fixed file afresh.
 * One replay at a time (a second is refused with 409 while the first runs).
 */
export class DeadLetterDesk {
  readonly #options: DeadLetterDeskOptions;
  #sink: Promise<DeadLetters> | undefined;
  #replaying = false;
  readonly #stop = new AbortController();

  constructor(options: DeadLetterDeskOptions) {
    this.#options = options;
  }

  async list(query: { state?: DeadLetterState | undefined; after?: string | undefined; limit: number }): Promise<DeadLetterPage> {
    return this.#use((sink) =>
      sink.list({
        limit: query.limit,
        ...(query.state === undefined ? {} : { state: query.state }),
        ...(query.after === undefined ? {} : { after: query.after }),
      }),
    );
  }

  async get(id: string): Promise<StoredDeadLetter | undefined> {
    return this.#use((sink) => sink.get(id));
  }

  async replay(ids: readonly string[]): Promise<ReplayReport> {
    if (this.#replaying) throw new HttpProblem(409, 'A replay is running: wait for it to end.');
    this.#replaying = true;
    try {
      return await this.#use((sink) =>
        sink.replay({ ids }, { ...this.#options.replay, isolation: 'thread', signal: this.#stop.signal, onResult: (result) => this.#options.onResult(result) }),
      );
    } finally {
      this.#replaying = false;
      this.#options.onChange();
    }
  }

  async purge(ids: readonly string[]): Promise<StoredDeadLetter[]> {
    try {
      return await this.#use((sink) => sink.purge({ ids }));
    } finally {
      this.#options.onChange();
    }
  }

  async close(): Promise<void> {
    this.#stop.abort();
    const sink = await this.#sink?.catch(() => undefined);
    this.#sink = undefined;
    await sink?.close().catch(() => {});
  }

  /**
   * Opens the sink on first use, and again after it could not be opened (a server down at start
   * need not keep the page broken). An unknown id is the page's mistake (400), as for the command.
   */
  async #use<T>(action: (sink: DeadLetters) => Promise<T>): Promise<T> {
    this.#sink ??= this.#options.open();
    let sink: DeadLetters;
    try {
      sink = await this.#sink;
    } catch (err) {
      this.#sink = undefined;
      throw new HttpProblem(502, `the dead-letter sink cannot be opened: ${err instanceof Error ? err.message : String(err)}`);
    }
    try {
      return await action(sink);
    } catch (err) {
      if (err instanceof HttpProblem) throw err;
      const message = err instanceof Error ? err.message : String(err);
      throw hasCode(err, ErrorCodes.CONFIG) ? new HttpProblem(400, message) : new HttpProblem(502, `the dead-letter sink failed: ${message}`);
    }
  }
}

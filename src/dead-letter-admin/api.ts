import { openDeadLetterStore } from '../dead-letter/index.js';
import { decodeCursor, encodeCursor, pageKeyOf, type DeadLetterFilter, type PageKey } from '../dead-letter/query.js';
import { afterPurge } from '../dead-letter/record.js';
import type { StoredDeadLetter } from '../dead-letter/sink.js';
import type { DeadLetterCount, DeadLetterStore } from '../dead-letter/store.js';
import { ConfigError } from '../errors.js';
import { openReplayResources, type ReplayRunOptions } from './replay-resources.js';
import { ReplayRun, type ReplayResult } from './replay.js';

export interface OpenDeadLettersOptions {
  /** Only the records of this `--idempotency-prefix` (default: every prefix of the sink). */
  prefix?: string;
  /** Folder for relative paths (`file:`, `sqlite:`, the handlers of a replay); default: the process's. */
  cwd?: string;
}

export interface DeadLetterListOptions extends DeadLetterFilter {
  /** Records per page, 1..10,000 (default 100). */
  limit?: number;
  /** The `next` cursor of the previous page. */
  after?: string;
}

export interface DeadLetterPage {
  /** In the order they were dead-lettered. */
  records: StoredDeadLetter[];
  /** Cursor of the next page (`after`), absent on the last one. */
  next?: string;
}

/** Which records: these ids, or every record matching a filter. */
export type DeadLetterSelection = { ids: readonly string[] } | DeadLetterFilter;

/** How a selection by filter treats a sink opened for every prefix (no `prefix`). */
export interface PrefixScope {
  /**
   * A filter selects across every prefix of the sink (default false). Without it, on a sink opened
   * with no `prefix` that holds records of several prefixes, `replay` and `purge` by filter refuse
   * (ConfigError naming the prefixes): one deployment's handlers must not run, or drop, another's.
   */
  allPrefixes?: boolean;
}

export interface ReplayOptions extends ReplayRunOptions, PrefixScope {
  /** Only say which records would run. */
  dryRun?: boolean;
  /** Called once the selection is known, with how many records will run. */
  onStart?: (total: number) => void;
  /** Called as each record ends. */
  onResult?: (result: ReplayResult) => void;
}

export interface ReplayReport {
  /** The records selected (for a dry run: the ones that would run). */
  selected: StoredDeadLetter[];
  /** One per record run (empty for a dry run). */
  results: ReplayResult[];
  /** True when every selected record ended `replayed` (by this replay or an earlier one). */
  ok: boolean;
}

export interface PurgeSelectionOptions extends PrefixScope {
  /** Only records dead-lettered more than this long ago, in ms. */
  olderThanMs?: number;
}

/** The programmatic face of a dead-letter sink: what `durable-worker dead-letters` does, for your own tools. */
export interface DeadLetters {
  /** One page of records, filtered. */
  list(options?: DeadLetterListOptions): Promise<DeadLetterPage>;
  /** Every record matching the filter, page after page. */
  all(filter?: DeadLetterFilter): AsyncIterable<StoredDeadLetter>;
  /** The record with this id (`<handler>:<event id>`), or undefined. Throws when several prefixes hold it. */
  get(id: string): Promise<StoredDeadLetter | undefined>;
  /**
   * Runs the current handlers on the selected records in state `dead` (ids, or a filter: state
   * `dead` is implied), as `run` would, through the idempotency store: a success marks the record
   * `replayed`, a failure keeps it `dead` with the new error. A record replayed already runs nothing.
   */
  replay(selection: DeadLetterSelection, options?: ReplayOptions): Promise<ReplayReport>;
  /** The records a purge would drop (ids, or a filter and/or an age); no change. */
  selectForPurge(selection: DeadLetterSelection, options?: PurgeSelectionOptions): Promise<StoredDeadLetter[]>;
  /** Marks the selected records `purged` and drops their data; returns those it changed. */
  purge(selection: DeadLetterSelection, options?: PurgeSelectionOptions): Promise<StoredDeadLetter[]>;
  /** Records in state `dead` per handler and reason (not offered by `file:` sinks: an empty list). */
  countDead(): Promise<DeadLetterCount[]>;
  close(): Promise<void>;
}

const DEFAULT_PAGE = 100;
const MAX_PAGE = 10_000;

/**
 * Opens a dead-letter sink by URL (`file:PATH`, `sqlite:PATH`, `redis://...`, `postgres://...`) for
 * reading and redriving it. Throws ConfigError for a bad URL, DW_ERR_DEAD_LETTER when the sink
 * cannot be reached.
 *
 * ```ts
 * const deadLetters = await openDeadLetters('postgres://app@db/app', { prefix: 'my-tenant:my-consumer' });
 * for await (const record of deadLetters.all({ state: 'dead', handler: 'orders/created' })) console.log(record.id, record.error.message);
 * const report = await deadLetters.replay({ handler: 'orders/created' }, { handlersDir: './handlers', idempotencyUrl: 'postgres://app@db/app' });
 * await deadLetters.close();
 * ```
 */
export async function openDeadLetters(url: string, options: OpenDeadLettersOptions = {}): Promise<DeadLetters> {
  const cwd = options.cwd ?? process.cwd();
  const store = await openDeadLetterStore(url, { prefix: options.prefix, cwd });
  return new DeadLetterSinkApi(store, cwd, options.prefix);
}

class DeadLetterSinkApi implements DeadLetters {
  readonly #store: DeadLetterStore;
  readonly #cwd: string;
  readonly #prefix: string | undefined;

  constructor(store: DeadLetterStore, cwd: string, prefix: string | undefined) {
    this.#store = store;
    this.#cwd = cwd;
    this.#prefix = prefix;
  }

  async list(options: DeadLetterListOptions = {}): Promise<DeadLetterPage> {
    const { limit = DEFAULT_PAGE, after, ...filter } = options;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new ConfigError(`page size must be 1..${MAX_PAGE} (got ${limit})`);
    const page = await this.#page(filter, limit, after === undefined ? undefined : decodeCursor(after));
    return page.more
      ? { records: page.records, next: encodeCursor(pageKeyOf(page.records[page.records.length - 1] as StoredDeadLetter)) }
      : { records: page.records };
  }

  async *all(filter: DeadLetterFilter = {}): AsyncIterable<StoredDeadLetter> {
    let after: PageKey | undefined;
    for (;;) {
      const page = await this.#page(filter, 1_000, after);
      yield* page.records;
      if (!page.more) return;
      after = pageKeyOf(page.records[page.records.length - 1] as StoredDeadLetter);
    }
  }

  async get(id: string): Promise<StoredDeadLetter | undefined> {
    const found = await this.#store.get(id);
    if (found.length > 1) {
      const prefixes = found.map((r) => r.prefix).join(', ');
      throw new ConfigError(
        `${id} is a record of several prefixes (${prefixes}): give --idempotency-prefix (or --destination) to choose`,
        '--idempotency-prefix',
      );
    }
    return found[0];
  }

  async replay(selection: DeadLetterSelection, options: ReplayOptions = {}): Promise<ReplayReport> {
    if (!('ids' in selection) && selection.state !== undefined && selection.state !== 'dead') {
      throw new ConfigError(`--state: replay runs records in state dead only (got ${selection.state})`, '--state');
    }
    if (!('ids' in selection)) await this.#oneScope(options);
    const selected = 'ids' in selection ? await this.#byIds(selection.ids) : await this.#collect({ ...selection, state: 'dead' });
    if (options.dryRun === true) return { selected: selected.filter((r) => r.state === 'dead'), results: [], ok: true };
    options.onStart?.(selected.length);
    if (selected.length === 0) return { selected, results: [], ok: true };
    const { resources, close } = await openReplayResources(this.#store, options, this.#cwd);
    try {
      const results = await new ReplayRun(resources).run(selected, options.onResult ?? (() => {}));
      // A record asked for by id that was replayed before counts as done; a purged one cannot be.
      const ok = results.every((r) => r.outcome === 'replayed' || r.outcome === 'already-replayed' || r.outcome === 'resolved');
      return { selected, results, ok };
    } finally {
      await close();
    }
  }

  async selectForPurge(selection: DeadLetterSelection, options: PurgeSelectionOptions = {}): Promise<StoredDeadLetter[]> {
    if ('ids' in selection) return (await this.#byIds(selection.ids)).filter((r) => r.state !== 'purged');
    const filter: DeadLetterFilter = { ...selection };
    if (options.olderThanMs !== undefined) {
      const cutoff = new Date(Date.now() - options.olderThanMs);
      filter.until = filter.until === undefined || cutoff < filter.until ? cutoff : filter.until;
    }
    if (Object.values(filter).every((v) => v === undefined)) {
      throw new ConfigError('purge needs record ids, a filter (--handler, --type, --reason, --state, --since, --until) or --older-than', '--older-than');
    }
    await this.#oneScope(options);
    return (await this.#collect(filter)).filter((r) => r.state !== 'purged');
  }

  async purge(selection: DeadLetterSelection, options: PurgeSelectionOptions = {}): Promise<StoredDeadLetter[]> {
    const purged: StoredDeadLetter[] = [];
    for (const record of await this.selectForPurge(selection, options)) {
      const next = afterPurge(record);
      if (await this.#store.update(next, record.state)) purged.push(next);
    }
    return purged;
  }

  async countDead(): Promise<DeadLetterCount[]> {
    return (await this.#store.countDead?.()) ?? [];
  }

  close(): Promise<void> {
    return this.#store.close();
  }

  /**
   * A selection by filter on a sink opened for every prefix: refused when the sink holds several
   * (unless `allPrefixes`), naming them. The records are read once to find out (no adapter keeps
   * the list of its prefixes cheaply), only when no prefix was given.
   */
  async #oneScope(scope: PrefixScope): Promise<void> {
    if (this.#prefix !== undefined || scope.allPrefixes === true) return;
    const prefixes = new Set<string>();
    for await (const record of this.all()) prefixes.add(record.prefix);
    if (prefixes.size <= 1) return;
    const names = [...prefixes].sort().join(', ');
    throw new ConfigError(
      `the sink holds the records of ${prefixes.size} prefixes (${names}): give --idempotency-prefix (or --tenant and --destination) to choose one, or --all-prefixes to take them all`,
      '--idempotency-prefix',
    );
  }

  /** One page, and whether another follows (one record more is read to know). */
  async #page(filter: DeadLetterFilter, limit: number, after: PageKey | undefined): Promise<{ records: StoredDeadLetter[]; more: boolean }> {
    const records = await this.#store.list({ ...filter, limit: limit + 1, ...(after === undefined ? {} : { after }) });
    return { records: records.slice(0, limit), more: records.length > limit };
  }

  async #collect(filter: DeadLetterFilter): Promise<StoredDeadLetter[]> {
    const out: StoredDeadLetter[] = [];
    for await (const record of this.all(filter)) out.push(record);
    return out;
  }

  /** The records of these ids, in the order given; an unknown id is bad input. */
  async #byIds(ids: readonly string[]): Promise<StoredDeadLetter[]> {
    const out: StoredDeadLetter[] = [];
    for (const id of new Set(ids)) {
      const record = await this.get(id);
      if (record === undefined)
        throw new ConfigError(`no dead-letter record ${JSON.stringify(id)} (ids are <handler>:<event id>, as \`dead-letters list\` shows them)`);
      out.push(record);
    }
    return out;
  }
}

import type { Writable } from 'node:stream';
import type { DeadLetters } from '../../dead-letter-admin/api.js';
import type { ReplayResult } from '../../dead-letter-admin/replay.js';
import type { DeadLetterFilter } from '../../dead-letter/query.js';
import type { StoredDeadLetter } from '../../dead-letter/sink.js';
import type { CliContext } from '../context.js';
import { didYouMean } from '../../runtime/did-you-mean.js';

/** True when a person is reading: tables and progress bars there, plain lines and JSON elsewhere. */
export function isTerminal(stream: Writable): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true;
}

function columnsOf(stream: Writable): number {
  return (stream as { columns?: number }).columns ?? 120;
}

/**
 * Watches for the reader going away (`list --json | head -1`): EPIPE then ends the listing quietly
 * instead of an unhandled stream error (which may come after the last write: the listener stays).
 */
export function watchBrokenPipe(stream: Writable): () => boolean {
  let broken = false;
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') broken = true;
    else throw err;
  });
  return () => broken;
}

/** `list --json` and `show --json`: the whole record on one line. */
export function jsonLine(record: StoredDeadLetter): string {
  return `${JSON.stringify(record)}\n`;
}

/**
 * One row per record; the error is cut to what is left of the terminal's width. A PREFIX column
 * when the records belong to several prefixes (a sink read without --idempotency-prefix).
 */
export function table(records: readonly StoredDeadLetter[], width: number): string {
  const withPrefix = new Set(records.map((r) => r.prefix)).size > 1;
  const headers = [...(withPrefix ? ['PREFIX'] : []), 'ID', 'STATE', 'REASON', 'TYPE', 'DEAD-LETTERED', 'ERROR'];
  const rows = records.map((r) => [
    ...(withPrefix ? [r.prefix] : []),
    r.id,
    r.state,
    r.reason,
    r.event.type,
    r.deadLetteredAt.replace(/\.\d{3}Z$/, 'Z'),
    oneLine(r.error.message),
  ]);
  const widths = headers.slice(0, -1).map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] as string).length)));
  const fixed = widths.reduce((sum, w) => sum + w + 2, 0);
  const errorWidth = Math.max(20, width - fixed);
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i < widths.length ? cell.padEnd(widths[i] as number) : cell.length > errorWidth ? `${cell.slice(0, errorWidth - 1)}…` : cell))
      .join('  ')
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join('\n')}\n`;
}

export function printTable(out: Writable, records: readonly StoredDeadLetter[]): void {
  out.write(table(records, columnsOf(out)));
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}

/** How a replay result reads in a line of the log of a replay. */
export function resultLine(result: ReplayResult): string {
  const error = result.error === undefined ? '' : `: ${oneLine(result.error.message)}`;
  return `${result.outcome.padEnd(16)} ${result.id}${result.prefix === '' ? '' : ` (${result.prefix})`}${error}\n`;
}

/** Counts of a replay's outcomes, for the progress bar and the summary. */
export class ReplayTally {
  readonly total: number;
  done = 0;
  readonly byOutcome = new Map<ReplayResult['outcome'], number>();

  constructor(total: number) {
    this.total = total;
  }

  add(result: ReplayResult): void {
    this.done += 1;
    this.byOutcome.set(result.outcome, (this.byOutcome.get(result.outcome) ?? 0) + 1);
  }

  summary(): string {
    const parts = [...this.byOutcome].map(([outcome, count]) => `${count} ${outcome}`);
    return `${this.done} of ${this.total} record(s): ${parts.length === 0 ? 'none run' : parts.join(', ')}\n`;
  }
}

/**
 * A progress bar redrawn in place (carriage return) on a terminal; lines of failures are written
 * above it. Elsewhere it draws nothing: logs and pipes get one line per record instead.
 */
export class ProgressBar {
  readonly #out: Writable;
  readonly #tally: ReplayTally;
  #drawn = false;

  constructor(out: Writable, tally: ReplayTally) {
    this.#out = out;
    this.#tally = tally;
  }

  /** A line that stays (a failure), then the bar again. */
  note(text: string): void {
    this.#clear();
    this.#out.write(text);
    this.draw();
  }

  draw(): void {
    const { done, total } = this.#tally;
    const width = Math.max(10, Math.min(40, columnsOf(this.#out) - 40));
    const filled = total === 0 ? width : Math.round((done / total) * width);
    const failed = this.#tally.byOutcome.get('failed') ?? 0;
    this.#out.write(`\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total}${failed > 0 ? ` (${failed} failed)` : ''}`);
    this.#drawn = true;
  }

  end(): void {
    this.#clear();
  }

  #clear(): void {
    if (this.#drawn) this.#out.write(`\r${' '.repeat(Math.max(0, columnsOf(this.#out) - 1))}\r`);
    this.#drawn = false;
  }
}

/** A --handler that no record has: the sink's handler names closest to it, on stderr. */
export async function hintHandler(sink: DeadLetters, filter: DeadLetterFilter, context: CliContext): Promise<void> {
  if (filter.handler === undefined) return;
  const names = new Set<string>();
  for await (const record of sink.all({})) if (names.add(record.handler).size >= 1_000) break;
  if (names.has(filter.handler)) return;
  context.stderr.write(`no record of handler ${JSON.stringify(filter.handler)}${didYouMean(filter.handler, names)}\n`);
}

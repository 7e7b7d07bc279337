import type { LogLineView } from './protocol.js';

/**
 * The serialised log lines of handler runs (handler-log-tap.ts brings them here). They are kept as
 * text and read only when a page opens their event: what a line costs the worker as it is written
 * is finding which event and handler it is about.
 */

/** A line as the console keeps it until its event is opened. */
export interface RawLogLine {
  eventId: string;
  handler: string | undefined;
  text: string;
}

/** A line read back: what the page shows, and the stack of the error it carries under `err`. */
export interface EventLogLine {
  line: LogLineView;
  stack?: string;
}

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/**
 * Bindings every line of a run carries, shown elsewhere in the page (or of no use there); `err`
 * is the run's error, whose message and stack the page shows with the run.
 */
const SHOWN_ELSEWHERE = new Set([
  'level',
  'time',
  'msg',
  'pid',
  'hostname',
  'eventId',
  'handler',
  'attempt',
  'workerId',
  'leaseId',
  'generation',
  'deliveryAttempt',
  'maxAttempts',
  'retryInMs',
  'thread',
  'component',
  'err',
]);

/** Fields of one line beyond this are cut: the page shows a log, not a data dump. */
export const MAX_FIELDS_CHARS = 2_000;
/** A line longer than this is not kept whole (its fields are cut when read anyway). */
export const MAX_LINE_CHARS = 16 * 1024;

/**
 * The first string value of `"name":"..."` in a pino line: a binding (`eventId`, `handler`) is
 * written before the line's own fields, so the first is the run's. Undefined when absent, or when
 * the value is escaped (then only parsing the line tells).
 */
function peekString(text: string, name: string): string | undefined {
  const key = `"${name}":"`;
  const start = text.indexOf(key);
  if (start < 0) return undefined;
  const from = start + key.length;
  const end = text.indexOf('"', from);
  if (end < 0) return undefined;
  const value = text.slice(from, end);
  return value.includes('\\') ? undefined : value;
}

/** The event and handler a serialised line is about, without parsing it; undefined for another line. */
export function peekEventLogLine(text: string): RawLogLine | undefined {
  let eventId = peekString(text, 'eventId');
  let handler = peekString(text, 'handler');
  if (eventId === undefined) {
    // An escaped id (or no id): the parser decides.
    if (!text.includes('"eventId":')) return undefined;
    try {
      const value = JSON.parse(text) as { eventId?: unknown; handler?: unknown };
      if (typeof value.eventId !== 'string') return undefined;
      eventId = value.eventId;
      handler = typeof value.handler === 'string' ? value.handler : undefined;
    } catch {
      return undefined;
    }
  }
  return { eventId, handler, text: text.length > MAX_LINE_CHARS ? shortened(text) : text };
}

/** A very long line, read now (rarely) and kept as what the page would show of it. */
function shortened(text: string): string {
  const read = readEventLogLine(text);
  if (read === undefined) return JSON.stringify({ level: 30, time: Date.now(), msg: `(a log line of ${text.length} characters that is not JSON)` });
  const { line, stack } = read;
  return JSON.stringify({
    level: line.level,
    time: line.time,
    msg: line.msg,
    handler: line.handler,
    attempt: line.attempt,
    ...(line.fields === undefined ? {} : { fields: line.fields }),
    ...(stack === undefined ? {} : { err: { stack } }),
  });
}

/** Reads a kept line for the page; undefined for one that is not JSON (a line cut at MAX_LINE_CHARS). */
export function readEventLogLine(text: string): EventLogLine | undefined {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const line: LogLineView = {
    time: typeof value.time === 'number' ? value.time : 0,
    level: typeof value.level === 'number' ? (LEVELS[value.level] ?? String(value.level)) : String(value.level ?? 'info'),
    msg: typeof value.msg === 'string' ? value.msg : '',
  };
  if (typeof value.handler === 'string') line.handler = value.handler;
  if (typeof value.attempt === 'number') line.attempt = value.attempt;
  const rest: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) if (!SHOWN_ELSEWHERE.has(key)) rest[key] = field;
  if (Object.keys(rest).length > 0) {
    const fields = JSON.stringify(rest);
    line.fields = fields.length > MAX_FIELDS_CHARS ? `${fields.slice(0, MAX_FIELDS_CHARS)}…` : fields;
  }
  const err = value.err as { stack?: unknown } | undefined;
  return { line, ...(typeof err?.stack === 'string' ? { stack: err.stack } : {}) };
}

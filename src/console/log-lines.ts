import type { LogLineView } from './protocol.js';

/** A serialised log line of a handler run, read back (handler-log-tap.ts brings them here). */
export interface EventLogLine {
  eventId: string;
  line: LogLineView;
  /** The stack of the error the line carries under `err` (the worker logs a failed run with it). */
  stack?: string;
}

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/**
 * Bindings every line of a run carries, shown elsewhere in the page (or of no use there); `err`
 * is the run's error, whose message and stack the page shows with the run.
 */
const SHOWN_ELSEWHERE = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'eventId', 'handler', 'attempt', 'workerId', 'leaseId', 'generation', 'thread', 'component', 'err']);

/** Fields of one line beyond this are cut: the page shows a log, not a data dump. */
export const MAX_FIELDS_CHARS = 2_000;

/** Reads one pino JSON line; undefined for a line that is not of an event (or not JSON). */
export function parseEventLogLine(text: string): EventLogLine | undefined {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || typeof value.eventId !== 'string') return undefined;
  const line: LogLineView = {
    time: typeof value.time === 'number' ? value.time : Date.now(),
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
  return { eventId: value.eventId, line, ...(typeof err?.stack === 'string' ? { stack: err.stack } : {}) };
}

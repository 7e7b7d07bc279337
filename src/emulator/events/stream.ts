import { randomUUID } from 'node:crypto';
import { stringifyJsonExact } from '../../ingest/index.js';
import type { CloudEvent } from '../../types.js';
import type { NewEvent } from '../context.js';

/**
 * One tenant's event stream. Sequences are integers here and decimal strings on the wire
 * (decimal strings increasing by 1 per tenant stream, starting at 1: what the worker's lag arithmetic
 * in src/observability/lag.ts relies on).
 *
 * Events live in an array with a base offset: `events[i]` has sequence `baseSequence + i`. Events
 * every durable consumer has committed are trimmed in amortised O(1), so a long-running emulator
 * with a million events holds only the uncommitted tail.
 *
 * Each event is kept as its JSON text, serialised once at append: a pull response is then a
 * concatenation (no per-pull stringify), the stored data is a snapshot the caller cannot mutate,
 * and flat strings cost the garbage collector far less than a million object graphs.
 */
export class EventStream {
  private events: string[] = [];
  /** Sequence of `events[0]`. */
  private baseSequence = 1;
  private lastSequence = 0;

  constructor(private readonly tenant: string) {}

  /** Sequence of the newest event; 0 before the first. */
  get head(): number {
    return this.lastSequence;
  }

  /** Events currently held (not yet trimmed). */
  get retained(): number {
    return this.events.length;
  }

  append(newEvents: readonly NewEvent[]): CloudEvent[] {
    // One timestamp per appended batch: the events of one ingest happen together, and it keeps a
    // million-event append cheap.
    const time = new Date().toISOString();
    const source = `/tenants/${this.tenant}`;
    // Constant members serialised once per batch; with the flattening below, each event serialises
    // only what differs between events, instead of JSON.stringify walking the whole object.
    const head = `{"specversion":"1.0","source":${JSON.stringify(source)},"time":"${time}","datacontenttype":"application/json"`;
    const appended: CloudEvent[] = [];
    // Checked before anything is appended: a missing type or subject would otherwise be spliced into
    // the stored JSON text as `undefined` and make every later pull response unparsable.
    for (const [index, event] of newEvents.entries()) {
      if (typeof event.type !== 'string' || event.type === '' || typeof event.subject !== 'string') {
        throw new TypeError(`appendEvents: event ${index} needs a non-empty string type and a string subject`);
      }
    }
    for (const event of newEvents) {
      const sequence = String(++this.lastSequence);
      const id = randomUUID();
      const data = event.data === undefined ? null : event.data;
      const tracing = event.traceparent === undefined ? '' : traceAttributesJson(event.traceparent, event.tracestate);
      const json = `${head},"id":"${id}","type":${JSON.stringify(event.type)},"subject":${JSON.stringify(event.subject)},"sequence":"${sequence}"${tracing},"data":${stringifyJsonExact(data)}}`;
      // A template literal is a rope of its pieces (~1 KB per event kept alive); reading one
      // character makes V8 flatten it into one sequential string (~1 byte per character).
      json.charCodeAt(0);
      this.events.push(json);
      const appendedEvent: CloudEvent = {
        specversion: '1.0',
        id,
        source,
        type: event.type,
        subject: event.subject,
        time,
        datacontenttype: 'application/json',
        sequence,
        data,
      };
      if (event.traceparent !== undefined) appendedEvent.traceparent = event.traceparent;
      if (event.traceparent !== undefined && event.tracestate !== undefined) appendedEvent.tracestate = event.tracestate;
      appended.push(appendedEvent);
    }
    return appended;
  }

  /** JSON texts of events `first..last` inclusive; the range must not have been trimmed. */
  slice(first: number, last: number): string[] {
    if (first < this.baseSequence) {
      throw new Error(`events before sequence ${this.baseSequence} were trimmed (asked for ${first})`);
    }
    return this.events.slice(first - this.baseSequence, last - this.baseSequence + 1);
  }

  /**
   * Forgets events up to `sequence` inclusive. Copies only when at least half the array goes, so
   * the cost is amortised O(1) per event.
   */
  trimThrough(sequence: number): void {
    const droppable = Math.min(sequence, this.lastSequence) - this.baseSequence + 1;
    if (droppable <= 0) return;
    if (droppable < 4096 && droppable < this.events.length) return;
    if (droppable * 2 < this.events.length) return;
    this.events = this.events.slice(droppable);
    this.baseSequence += droppable;
  }
}

/** The distributed tracing extension's attributes as JSON members (each preceded by a comma). */
function traceAttributesJson(traceparent: string, tracestate: string | undefined): string {
  return `,"traceparent":${JSON.stringify(traceparent)}${tracestate === undefined ? '' : `,"tracestate":${JSON.stringify(tracestate)}`}`;
}

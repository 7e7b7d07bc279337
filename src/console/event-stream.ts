import type { ServerResponse } from 'node:http';
import type { StreamMessages } from './protocol.js';

/** A comment line this often keeps proxies and the browser from calling an idle stream dead. */
const HEARTBEAT_MS = 15_000;
/** Wait this long before reconnecting (the `retry:` field): a restarted process is back within a second or two. */
export const RECONNECT_MS = 1_000;
/** A page that reads slower than the worker writes is dropped past this much unsent output; its browser reconnects and reads the list anew. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

type Message = { [K in keyof StreamMessages]: [K, StreamMessages[K]] }[keyof StreamMessages];

/**
 * The pages connected to `/api/stream` (server-sent events, one-way, reconnected by the browser
 * itself). Every message goes to every page: a handful of tabs on a developer's machine.
 */
export class EventStreamHub {
  readonly #clients = new Set<ServerResponse>();
  #heartbeat: NodeJS.Timeout | undefined;

  get size(): number {
    return this.#clients.size;
  }

  /** Takes over the response; `greeting` is what this page alone receives first (hello, the whole list). */
  add(res: ServerResponse, greeting: readonly Message[]): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      // No buffering proxy in between should hold messages back.
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    res.write(`retry: ${RECONNECT_MS}\n\n`);
    for (const [name, data] of greeting) res.write(frame(name, data));
    this.#clients.add(res);
    res.on('close', () => this.#remove(res));
    if (this.#heartbeat === undefined) {
      this.#heartbeat = setInterval(() => this.#send(': ping\n\n'), HEARTBEAT_MS);
      this.#heartbeat.unref();
    }
  }

  broadcast<K extends keyof StreamMessages>(name: K, data: StreamMessages[K]): void {
    if (this.#clients.size > 0) this.#send(frame(name, data));
  }

  /** Ends every stream (the process is stopping: the pages start reconnecting). */
  close(): void {
    for (const res of this.#clients) res.end();
    this.#clients.clear();
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  #send(text: string): void {
    for (const res of this.#clients) {
      if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
      else res.write(text);
    }
  }

  #remove(res: ServerResponse): void {
    this.#clients.delete(res);
    if (this.#clients.size === 0) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
    }
  }
}

/** One message: JSON never holds a raw newline, so one `data:` line is enough. */
function frame(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

/** One call of the handler to the dependency, as the dependency saw it. */
export interface DependencyCall {
  eventId: string;
  subject: string;
  atMs: number;
  ok: boolean;
}

/**
 * The handlers' downstream (a database, an API): `POST /call?event=<id>&subject=<s>` answers 200
 * after `delayMs` (the work), or at once 503 while it is down and 500 for the poison subject. Every
 * call is kept: a 200 is the event's effect, anything else one failed run of the handler.
 */
export class Dependency {
  readonly calls: DependencyCall[] = [];
  down = false;
  readonly #server: Server;
  url = '';

  constructor(private readonly o: { delayMs: number; poisonSubject?: string }) {
    this.#server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://dependency');
      const eventId = url.searchParams.get('event') ?? '';
      const subject = url.searchParams.get('subject') ?? '';
      req.resume();
      const answer = (status: number) => {
        this.calls.push({ eventId, subject, atMs: Date.now(), ok: status === 200 });
        res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'unavailable');
      };
      if (this.down) return answer(503);
      if (subject === this.o.poisonSubject) return answer(500);
      setTimeout(() => answer(this.down ? 503 : 200), this.o.delayMs);
    });
  }

  async start(): Promise<void> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    this.#server.close();
    await once(this.#server, 'close');
  }
}

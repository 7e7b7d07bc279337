import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

/** One call of the handler to the dependency, as the dependency saw it. */
export interface DependencyCall {
  eventId: string;
  subject: string;
  atMs: number;
  ok: boolean;
  /** The calling handler (`handler=`), when it says. */
  handler?: string;
  /** When its event was appended to the stream (`published=`, the event's time), when it says. */
  publishedAtMs?: number;
}

/**
 * The handlers' downstream (a database, an API): `POST /call?event=<id>&subject=<s>` answers 200
 * after `delayMs` (the work), or at once 503 while it is down and 500 for the poison subject. Every
 * call is kept: a 200 is the event's effect, anything else one failed run of the handler.
 */
export class Dependency {
  readonly calls: DependencyCall[] = [];
  down = false;
  /** While down, only this handler's calls fail (undefined: every call). */
  downFor: string | undefined = undefined;
  readonly #server: Server;
  url = '';

  constructor(private readonly o: { delayMs: number; poisonSubject?: string }) {
    this.#server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://dependency');
      const eventId = url.searchParams.get('event') ?? '';
      const subject = url.searchParams.get('subject') ?? '';
      const handler = url.searchParams.get('handler') ?? undefined;
      const published = url.searchParams.get('published');
      const publishedAtMs = published === null ? undefined : Date.parse(published);
      const isDown = () => this.down && (this.downFor === undefined || this.downFor === handler);
      req.resume();
      const answer = (status: number) => {
        this.calls.push({
          eventId,
          subject,
          atMs: Date.now(),
          ok: status === 200,
          ...(handler === undefined ? {} : { handler }),
          ...(publishedAtMs === undefined ? {} : { publishedAtMs }),
        });
        res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'unavailable');
      };
      if (isDown()) return answer(503);
      if (subject === this.o.poisonSubject) return answer(500);
      setTimeout(() => answer(isDown() ? 503 : 200), this.o.delayMs);
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

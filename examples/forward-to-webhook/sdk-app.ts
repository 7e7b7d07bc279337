/**
 * The same kind of app as app.ts, written with the official CloudEvents SDK (`cloudevents` 10):
 * `HTTP.toEvent` reads both content modes. In binary mode the worker percent-encodes `ce-*` header
 * values as the HTTP binding says (3.1.3.2: space, `"`, `%` and anything beyond printable ASCII, as
 * UTF-8), and the SDK hands them over still encoded: a subject `Müller & Söhne` arrives as
 * `M%C3%BCller%20&%20S%C3%B6hne`. `receiveCloudEvent` undoes it for binary requests only; in
 * structured mode (`--forward-mode structured`) the JSON body carries the values as they are, and
 * decoding would corrupt any value containing `%`.
 *
 * Run it: `node --import tsx examples/forward-to-webhook/sdk-app.ts` (PORT, default 3000).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { HTTP, type CloudEvent } from 'cloudevents';

const STRUCTURED = 'application/cloudevents+json';

/** The event of one request, its `ce-*` header values percent-decoded in binary mode. */
export function receiveCloudEvent(headers: IncomingHttpHeaders, body: string): CloudEvent<unknown> {
  const event = HTTP.toEvent({ headers, body }) as CloudEvent<unknown>;
  if (headers['content-type']?.startsWith(STRUCTURED)) return event;
  const decoded: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith('ce-') && typeof value === 'string') decoded[name.slice(3)] = decodeURIComponent(value);
  }
  return event.cloneWith(decoded) as CloudEvent<unknown>;
}

export interface SdkApp {
  url: string;
  /** Per request: the event as `HTTP.toEvent` gives it, and as `receiveCloudEvent` does. */
  received: Array<{ sdk: CloudEvent<unknown>; decoded: CloudEvent<unknown> }>;
  close(): Promise<void>;
}

export async function startSdkApp(port = 0, host = '127.0.0.1'): Promise<SdkApp> {
  const received: SdkApp['received'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      try {
        received.push({ sdk: HTTP.toEvent({ headers: req.headers, body }) as CloudEvent<unknown>, decoded: receiveCloudEvent(req.headers, body) });
        res.writeHead(204).end();
      } catch {
        // Not a CloudEvent, or a malformed percent-encoding: it will never parse (dead-letter).
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const app = await startSdkApp(Number(process.env.PORT ?? 3000));
  process.stdout.write(`app listening on ${app.url}/events\n`);
  process.on('SIGTERM', () => void app.close());
  process.on('SIGINT', () => void app.close());
}

/**
 * The app next to the worker in sidecar mode (`--forward-url`): a plain HTTP server that receives
 * each event as a CloudEvents HTTP request in binary mode (attributes in `ce-*` headers, `data` as
 * the JSON body). Its status code is the outcome: 2xx = done, 4xx = dead-letter (the event can never
 * succeed), 5xx/408/429 = retry later. It knows nothing of leases, tokens or acks.
 *
 * Run it: `node --import tsx examples/forward-to-webhook/app.ts` (PORT, default 3000).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';

export interface ReceivedEvent {
  id: string;
  type: string;
  subject: string;
  sequence: string;
  data: unknown;
}

export interface RunningApp {
  url: string;
  received: ReceivedEvent[];
  close(): Promise<void>;
}

/** CloudEvents header values are percent-encoded (HTTP binding 3.1.3.2). */
function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return typeof value === 'string' ? decodeURIComponent(value) : '';
}

/** What the app does with an entry: here it refuses entries without a name (a 422 = dead-letter). */
function accept(event: ReceivedEvent): number {
  const data = event.data as { current?: { properties?: Array<{ id: string; value: unknown }> } } | null;
  const name = data?.current?.properties?.find((p) => p.id === 'name')?.value;
  return typeof name === 'string' && name !== '' ? 204 : 422;
}

export async function startApp(port = 0, host = '127.0.0.1'): Promise<RunningApp> {
  const received: ReceivedEvent[] = [];
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/events') {
      res.writeHead(404).end();
      return;
    }
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      let data: unknown;
      try {
        data = JSON.parse(body);
      } catch {
        res.writeHead(400).end();
        return;
      }
      const event = {
        id: header(req.headers, 'ce-id'),
        type: header(req.headers, 'ce-type'),
        subject: header(req.headers, 'ce-subject'),
        sequence: header(req.headers, 'ce-sequence'),
        data,
      };
      received.push(event);
      res.writeHead(accept(event)).end();
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
  const app = await startApp(Number(process.env.PORT ?? 3000));
  process.stdout.write(`app listening on ${app.url}/events\n`);
  process.on('SIGTERM', () => void app.close());
  process.on('SIGINT', () => void app.close());
}

/**
 * A real OTLP/HTTP trace receiver for tests: an HTTP server on port 0 that accepts
 * `POST /v1/traces` in protobuf (`application/x-protobuf`) and JSON (`application/json`), gzip or
 * not, decodes what the exporter sent and keeps the spans, normalised to one shape.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { decodeTraceRequest, type JsonAnyValue } from './otlp-protobuf.js';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
  events: { name: string; attributes: Record<string, unknown> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  resource: Record<string, unknown>;
  scope: string;
}

export interface OtlpReceiver {
  /** Base URL for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Content types of the export requests, in arrival order. */
  contentTypes: string[];
  /** Resolves with the spans once `predicate` holds; rejects after `timeoutMs`. */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

const SPAN_KINDS: Record<string, number> = { SPAN_KIND_INTERNAL: 1, SPAN_KIND_SERVER: 2, SPAN_KIND_CLIENT: 3, SPAN_KIND_PRODUCER: 4, SPAN_KIND_CONSUMER: 5 };

function id(value: unknown): string {
  if (typeof value !== 'string' || value === '') return '';
  return /^[0-9a-f]+$/i.test(value) && (value.length === 32 || value.length === 16) ? value.toLowerCase() : Buffer.from(value, 'base64').toString('hex');
}

function plain(value: JsonAnyValue | undefined): unknown {
  if (value === undefined) return undefined;
  if ('stringValue' in value) return value.stringValue;
  if ('boolValue' in value) return value.boolValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  if ('arrayValue' in value) return ((value.arrayValue as { values?: JsonAnyValue[] }).values ?? []).map(plain);
  return value;
}

function attributes(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of (list as { key: string; value?: JsonAnyValue }[] | undefined) ?? []) out[kv.key] = plain(kv.value);
  return out;
}

/** OTLP/JSON (or the protobuf decoded to it) -> ReceivedSpan[]. */
export function normaliseSpans(request: { resourceSpans?: unknown[] }): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of (request.resourceSpans ?? []) as { resource?: { attributes?: unknown }; scopeSpans?: unknown[] }[]) {
    const resource = attributes(rs.resource?.attributes);
    for (const ss of (rs.scopeSpans ?? []) as { scope?: { name?: string }; spans?: unknown[] }[]) {
      for (const s of (ss.spans ?? []) as Record<string, any>[]) {
        const parent = id(s.parentSpanId);
        out.push({
          traceId: id(s.traceId),
          spanId: id(s.spanId),
          parentSpanId: parent === '' ? undefined : parent,
          name: String(s.name ?? ''),
          kind: typeof s.kind === 'string' ? (SPAN_KINDS[s.kind] ?? 0) : Number(s.kind ?? 0),
          attributes: attributes(s.attributes),
          status: { code: Number(s.status?.code ?? 0), ...(s.status?.message ? { message: String(s.status.message) } : {}) },
          events: ((s.events ?? []) as { name: string; attributes?: unknown }[]).map((e) => ({ name: e.name, attributes: attributes(e.attributes) })),
          links: ((s.links ?? []) as { traceId: string; spanId: string; attributes?: unknown }[]).map((l) => ({
            traceId: id(l.traceId),
            spanId: id(l.spanId),
            attributes: attributes(l.attributes),
          })),
          resource,
          scope: ss.scope?.name ?? '',
        });
      }
    }
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
        contentTypes.push(type);
        const decoded = type === 'application/x-protobuf' ? decodeTraceRequest(body) : (JSON.parse(body.toString('utf8')) as { resourceSpans?: unknown[] });
        spans.push(...normaliseSpans(decoded));
        res.writeHead(200, { 'content-type': type === 'application/x-protobuf' ? 'application/x-protobuf' : 'application/json' });
        res.end(type === 'application/x-protobuf' ? Buffer.alloc(0) : '{}');
        for (const wake of waiters) wake();
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    waitFor(predicate, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(spans)) return;
          cleanup();
          resolve(spans);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`OTLP receiver: condition not met within ${timeoutMs} ms; got ${spans.length} spans: ${spans.map((s) => s.name).join(', ')}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

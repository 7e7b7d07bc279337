// A tiny OTLP/HTTP trace receiver for the docs/tracing.md walk-through: it accepts what the worker's
// exporter sends with OTEL_EXPORTER_OTLP_PROTOCOL=http/json and prints each trace as a tree of text
// once no span of it arrived for a second. Not a collector: use one (or Jaeger, Tempo...) for real work.
//
//   node examples/tracing/print-traces.mjs          # listens on 127.0.0.1:4318 (PORT=... to change)
import { createServer } from 'node:http';

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const QUIET_MS = 1_000;
/** traceId -> its spans, and the timer that prints it. */
const traces = new Map();

function value(v) {
  if (v === undefined || v === null) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('boolValue' in v) return v.boolValue;
  if ('doubleValue' in v) return v.doubleValue;
  return JSON.stringify(v);
}

function attributes(list = []) {
  return Object.fromEntries(list.map((kv) => [kv.key, value(kv.value)]));
}

/** The attributes worth a glance, in one line. */
function summary(span) {
  const a = span.attributes;
  const keep = [
    'cloudevents.event_subject',
    'durable_worker.handler',
    'durable_worker.outcome',
    'durable_worker.ack.result',
    'messaging.batch.message_count',
    'db.system',
    'db.statement',
  ];
  const parts = keep.filter((key) => a[key] !== undefined).map((key) => `${key.split('.').at(-1)}=${a[key]}`);
  if (span.status?.code === 2) parts.push(`ERROR ${JSON.stringify(span.status.message ?? '')}`);
  for (const link of span.links ?? []) parts.push(`link->${link.traceId.slice(0, 8)}…/${link.spanId}`);
  return parts.join(' ');
}

function print(traceId) {
  const spans = traces.get(traceId).spans;
  traces.delete(traceId);
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map();
  for (const span of spans) {
    const parent = span.parentSpanId && ids.has(span.parentSpanId) ? span.parentSpanId : 'root';
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(span);
  }
  const lines = [`trace ${traceId}`];
  const walk = (parent, depth) => {
    for (const span of (children.get(parent) ?? []).sort((x, y) => Number(BigInt(x.startTimeUnixNano) - BigInt(y.startTimeUnixNano)))) {
      const ms = Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1e6;
      const remote = parent === 'root' && span.parentSpanId ? ` (child of ${span.parentSpanId}, not exported here)` : '';
      lines.push(`${'  '.repeat(depth)}└─ ${span.name} [${KINDS[span.kind] ?? span.kind}] ${ms.toFixed(1)} ms${remote} ${summary(span)}`.trimEnd());
      walk(span.spanId, depth + 1);
    }
  };
  walk('root', 1);
  console.log(lines.join('\n'));
}

function take(request) {
  for (const rs of request.resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      for (const raw of ss.spans ?? []) {
        const span = {
          ...raw,
          attributes: attributes(raw.attributes),
          kind: typeof raw.kind === 'number' ? raw.kind : KINDS.indexOf(String(raw.kind).replace('SPAN_KIND_', '').toLowerCase()),
        };
        const entry = traces.get(span.traceId) ?? { spans: [], timer: undefined };
        entry.spans.push(span);
        clearTimeout(entry.timer);
        entry.timer = setTimeout(() => print(span.traceId), QUIET_MS);
        traces.set(span.traceId, entry);
      }
    }
  }
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/v1/traces') return res.writeHead(404).end();
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
      return res.writeHead(415, { 'content-type': 'text/plain' }).end('print-traces reads OTLP/JSON: set OTEL_EXPORTER_OTLP_PROTOCOL=http/json\n');
    }
    try {
      take(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    } catch (err) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`${err.message}\n`);
    }
  });
});
server.listen(Number(process.env.PORT ?? 4318), '127.0.0.1', () => {
  console.log(`OTLP/HTTP (JSON) receiver listening on http://127.0.0.1:${server.address().port}`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));

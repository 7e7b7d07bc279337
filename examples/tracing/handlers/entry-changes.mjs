// The walk-through's handler: it stands for one that writes each changed entry to a database. Its
// span, made through @opentelemetry/api, is what an instrumented client (`pg`, `fetch`) would make:
// with --otel it nests under the worker's `process` span of the event, in the ingest's trace.
import { SpanKind, trace } from '@opentelemetry/api';
import { defineHandler } from 'durable-worker';

const tracer = trace.getTracer('examples/tracing');

export default defineHandler({
  type: 'source_entry.updated',
  async handle(event, ctx) {
    await tracer.startActiveSpan(
      'UPDATE products',
      { kind: SpanKind.CLIENT, attributes: { 'db.system': 'postgresql', 'db.statement': 'UPDATE products SET title = $1 WHERE id = $2' } },
      async (span) => {
        // The database round trip would be here.
        await new Promise((resolve) => setTimeout(resolve, 5));
        span.end();
      },
    );
    ctx.log.info({ entryId: event.subject }, 'entry saved');
  },
});

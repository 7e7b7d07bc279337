// Files starting with `_` are helpers, never loaded as handlers.
const base = process.env.BENCH_DEPENDENCY_URL;
if (!base) throw new Error('BENCH_DEPENDENCY_URL is not set');

/** One call to the dependency of bench/outage/dependency.ts for `handler`; any answer but 200 is a failed run. */
export async function callDependency(handler, event, signal) {
  const query = new URLSearchParams({ event: event.id, subject: event.subject ?? '', handler, published: event.time ?? '' });
  const response = await fetch(`${base}/call?${query}`, { method: 'POST', signal });
  await response.text();
  if (response.status !== 200) throw new Error(`dependency answered ${response.status}`);
}

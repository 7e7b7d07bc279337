// The naive pull loop (naive-loop.mjs) with its handler run in worker threads, started as the
// worker's thread isolation starts them (piscina, THREADS of them, default 2): the floor of a cold
// start in thread isolation on this machine, without the worker's CLI, store, logs or metrics.
// Used by bench/coldstart/main.ts; arguments: BASE_URL DESTINATION API_KEY HANDLER_FILE [THREADS].
import { Piscina } from 'piscina';

const [baseUrl, destination, apiKey, handlerFile, threads = '2'] = process.argv.slice(2);
const pool = new Piscina({
  filename: new URL('./naive-thread.mjs', import.meta.url).href,
  minThreads: Number(threads),
  maxThreads: Number(threads),
  atomics: 'disabled',
});
const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
const base = `${baseUrl}/v1/event-destinations/${encodeURIComponent(destination)}`;
for (;;) {
  const pulled = await fetch(`${base}/pull?limit=20&visibility=60&workerId=naive`, { method: 'POST', headers });
  if (pulled.status === 204) break;
  if (pulled.status !== 200) throw new Error(`pull: ${pulled.status} ${await pulled.text()}`);
  const batch = await pulled.json();
  await Promise.all(batch.events.map((event) => pool.run({ handlerFile, event })));
  const acked = await fetch(`${base}/acknowledge`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ leaseId: batch.leaseId, generation: batch.generation, status: 'ok' }),
  });
  if (!acked.ok) throw new Error(`ack: ${acked.status} ${await acked.text()}`);
}
await pool.destroy();

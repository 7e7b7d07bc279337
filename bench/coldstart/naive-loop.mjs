// The floor a worker's cold start is compared with: a naive pull loop in one file, no dependency,
// no store, no threads. Pulls one batch with the API key, runs the handler module on each event,
// acks it and exits. Used by bench/coldstart/main.ts; arguments: BASE_URL DESTINATION API_KEY HANDLER_FILE.
const [baseUrl, destination, apiKey, handlerFile] = process.argv.slice(2);
const { default: handler } = await import(handlerFile);
const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
const base = `${baseUrl}/v1/event-destinations/${encodeURIComponent(destination)}`;
for (;;) {
  const pulled = await fetch(`${base}/pull?limit=20&visibility=60&workerId=naive`, { method: 'POST', headers });
  if (pulled.status === 204) break;
  if (pulled.status !== 200) throw new Error(`pull: ${pulled.status} ${await pulled.text()}`);
  const batch = await pulled.json();
  for (const event of batch.events) await handler.handle(event, {});
  const acked = await fetch(`${base}/acknowledge`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ leaseId: batch.leaseId, generation: batch.generation, status: 'ok' }),
  });
  if (!acked.ok) throw new Error(`ack: ${acked.status} ${await acked.text()}`);
}

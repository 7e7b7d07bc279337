// The handler's own ceiling for phase f: the benchmark's handler alone, in a fresh process with no
// framework and no platform, on `events` synthetic events whose subjects cycle over `subjects`, each
// subject's events one after another (as the worker must run them). Prints one JSON line.
//   node handler-ceiling-child.mjs <events> <subjects>   (env as the worker's: BENCH_HANDLER_DELAY_MS, BENCH_EFFECTS_FILE)
// What bounds the worker once every subject is busy is this: the handler's time per event, start to
// start, on this machine.
const [events, subjects] = process.argv.slice(2).map(Number);
const { default: handler } = await import('./handlers/work.mjs');

const perSubject = Math.ceil(events / subjects);
const started = performance.now();
await Promise.all(
  Array.from({ length: subjects }, async (_, subject) => {
    for (let i = 0; i < perSubject; i++) {
      const index = i * subjects + subject;
      if (index >= events) return;
      await handler.handle({ id: `ceiling-${index}`, subject: `entry-${subject}`, type: 'bench.event', data: {} });
    }
  }),
);
const seconds = (performance.now() - started) / 1_000;
process.stdout.write(`${JSON.stringify({ events, seconds, eventsPerSecond: events / seconds })}\n`);

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withEmulator } from 'durable-worker/testing';
import { startApp, type RunningApp } from './app.js';

describe('examples/forward-to-webhook', () => {
  let app: RunningApp;
  beforeEach(async () => {
    app = await startApp();
  });
  afterEach(async () => {
    await app.close();
  });

  it('the worker forwards each event to the app; the app status decides ok or dead-letter', async () => {
    await withEmulator({ worker: { forwardUrl: `${app.url}/events` } }, async (env) => {
      await env.ingest('products', [
        { id: 'p-1', properties: [{ id: 'name', value: 'Kettle' }] },
        { id: 'p-2', properties: [{ id: 'price', value: 3.5 }] },
      ]);
      const settled = await env.waitForSettled(2);
      expect(settled.map((o) => [o.event.subject, o.handler, o.outcome])).toEqual([
        ['p-1', '@forward', 'ok'],
        ['p-2', '@forward', 'dead_lettered'],
      ]);
      // The app saw the CloudEvent attributes and the data with previous and current values.
      expect(app.received.map((e) => [e.type, e.subject])).toEqual([
        ['source_entry.updated', 'p-1'],
        ['source_entry.updated', 'p-2'],
      ]);
      expect(app.received[0]).toMatchObject({ id: settled[0]!.event.id, sequence: settled[0]!.event.sequence, data: { entryId: 'p-1', previous: null } });
      expect(env.deadLetters[0]?.error.message).toMatch(/answered 422/);
    });
  });

  it('also runs as a standalone process (the command in its README)', async () => {
    const { spawn } = await import('node:child_process');
    const { createRequire } = await import('node:module');
    const { pathToFileURL, fileURLToPath } = await import('node:url');
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    const child = spawn(process.execPath, ['--import', tsx, fileURLToPath(new URL('./app.ts', import.meta.url))], {
      env: { ...process.env, PORT: '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          out += chunk;
          const match = /app listening on (\S+)/.exec(out);
          if (match?.[1] !== undefined) resolve(match[1]);
        });
        child.on('exit', (code) => reject(new Error(`app exited ${code}`)));
      });
      const answer = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'ce-id': 'x' },
        body: JSON.stringify({ current: { properties: [{ id: 'name', value: 'Mug' }] } }),
      });
      expect(answer.status).toBe(204);
    } finally {
      child.kill('SIGTERM');
    }
  });
});

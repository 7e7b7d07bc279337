import { EventEmitter } from 'node:events';
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { startHealthServer } from '../../src/observability/health-server.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { WorkerEmitter } from '../../src/observability/worker-events.js';

describe('startHealthServer', () => {
  it('answers healthz, readyz (503 then 200), metrics, 404 and closes', async () => {
    const bus = new EventEmitter() as WorkerEmitter;
    const metrics = createMetrics({ events: bus, destination: 'dest-h1', collectDefaultMetrics: false });
    let ready = false;
    let reason: string | undefined;
    const server = await startHealthServer({ port: 0, host: '127.0.0.1', registry: metrics.registry, isReady: () => ready, notReadyReason: () => reason });
    try {
      expect(server.port).toBeGreaterThan(0);
      expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const unready = await fetch(`${server.url}/readyz`);
      expect([unready.status, await unready.text()]).toEqual([503, 'not ready\n']);
      reason = 'no credential obtained yet';
      expect(await (await fetch(`${server.url}/readyz`)).text()).toBe('not ready: no credential obtained yet\n');
      ready = true;
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      bus.emit('inflight:changed', { inFlight: 5 });
      const res = await fetch(`${server.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(metrics.registry.contentType);
      expect(await res.text()).toContain('durable_worker_in_flight_events 5');
      expect((await fetch(`${server.url}/nope`)).status).toBe(404);
      expect((await fetch(`${server.url}/healthz`, { method: 'POST' })).status).toBe(405);
    } finally {
      await server.close();
      await server.close();
      metrics.close();
    }
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it('reports a taken port as a configuration error naming --metrics-port', async () => {
    const bus = new EventEmitter() as WorkerEmitter;
    const metrics = createMetrics({ events: bus, destination: 'dest-h2', collectDefaultMetrics: false });
    const first = await startHealthServer({ port: 0, host: '127.0.0.1', registry: metrics.registry, isReady: () => true });
    try {
      await expect(startHealthServer({ port: first.port, host: '127.0.0.1', registry: metrics.registry, isReady: () => true })).rejects.toMatchObject({
        code: 'DW_ERR_CONFIG',
        message: expect.stringMatching(
          new RegExp(
            `^--metrics-port: port ${first.port} on 127\\.0\\.0\\.1 is taken \\(EADDRINUSE\\): choose another, e\\.g\\. --metrics-port \\d+ \\(free now\\), or --metrics-port 0 for any free one$`,
          ),
        ),
      });
    } finally {
      await first.close();
      metrics.close();
    }
  });

  it('on loopback or with allowed hosts, refuses another Host (a rebound name); on 0.0.0.0 without them, answers any (probes use the pod IP)', async () => {
    const metrics = createMetrics({ events: new EventEmitter() as WorkerEmitter, destination: 'dest-h3', collectDefaultMetrics: false });
    const status = (port: number, host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: '/metrics', headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    const loopback = await startHealthServer({ port: 0, host: '127.0.0.1', registry: metrics.registry, isReady: () => true });
    const allowed = await startHealthServer({ port: 0, host: '0.0.0.0', allowedHosts: ['metrics.example'], registry: metrics.registry, isReady: () => true });
    const open = await startHealthServer({ port: 0, host: '0.0.0.0', registry: metrics.registry, isReady: () => true });
    try {
      expect(await status(loopback.port, `localhost:${loopback.port}`)).toBe(200);
      expect(await status(loopback.port, `127.0.0.1.evil.example:${loopback.port}`)).toBe(403);
      expect(await status(allowed.port, 'metrics.example')).toBe(200);
      expect(await status(allowed.port, '[::1]')).toBe(200);
      expect(await status(allowed.port, 'evil.example')).toBe(403);
      expect(await status(open.port, '10.1.2.3:9464')).toBe(200);
    } finally {
      await Promise.all([loopback.close(), allowed.close(), open.close()]);
      metrics.close();
    }
  });
});

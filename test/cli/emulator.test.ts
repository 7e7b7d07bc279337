import { describe, expect, it } from 'vitest';
import { CliProcess } from './cli-process.js';

describe('durable-worker emulator', () => {
  it('serves /oauth2/token with the printed defaults and exits 0 on SIGTERM', async () => {
    const cli = new CliProcess(['emulator', '--port', '0']);
    try {
      const [, url] = await cli.waitForOutput(/emulator listening on (http:\/\/127\.0\.0\.1:\d+)/);
      // The next log line: it may come in a chunk of its own.
      await cli.waitForOutput(/default credentials: tenant dev-tenant, client dev-client \/ dev-secret/);
      const res = await fetch(`${url}/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'dev-client', client_secret: 'dev-secret', audience: 'dev-tenant' }),
      });
      expect(res.status).toBe(200);
      const token = (await res.json()) as { access_token?: unknown };
      expect(typeof token.access_token).toBe('string');
      cli.kill('SIGTERM');
      const result = await cli.exited;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('emulator stopped');
    } finally {
      cli.kill('SIGKILL');
    }
  });

  it('reports a taken port as exit 2 naming --port and a free one (emulator and dev)', async () => {
    const first = new CliProcess(['emulator', '--port', '0']);
    try {
      const [, port] = await first.waitForOutput(/emulator listening on http:\/\/127\.0\.0\.1:(\d+)/);
      const results = await Promise.all([
        new CliProcess(['emulator', '--port', port!]).exited,
        new CliProcess(['dev', '--port', port!, '--no-console', '--metrics-port', '0']).exited,
      ]);
      for (const result of results) {
        expect(result.code).toBe(2);
        const [, free] =
          /^durable-worker: --port: port \d+ on 127\.0\.0\.1 is taken \(EADDRINUSE\): choose another, e\.g\. --port (\d+) \(free now\), or --port 0 for any free one$/.exec(
            result.stderr.trim(),
          ) ?? [];
        expect(free, result.stderr).toBeDefined();
        expect(free).not.toBe(port);
      }
      expect(results[0]!.stderr).toContain(`port ${port} on`);
    } finally {
      first.kill('SIGKILL');
    }
  });
});

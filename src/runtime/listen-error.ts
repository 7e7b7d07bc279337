import { createServer } from 'node:net';
import { ConfigError } from '../errors.js';

/** A port free on `host` right now (the system's pick), or undefined when none can be had. */
export function freePort(host: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : undefined));
    });
  });
}

/**
 * A local server that cannot listen, as a configuration error naming its option (exit 2): a taken
 * port comes with the flag to give and a port free right now (or 0, any free port), whichever
 * server it is (--port, --console-port, --metrics-port).
 */
export async function listenError(err: unknown, option: string, host: string, port: number): Promise<ConfigError> {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'EADDRINUSE') {
    const free = await freePort(host);
    const suggestion = free === undefined ? `${option} 0 for any free one` : `e.g. ${option} ${free} (free now), or ${option} 0 for any free one`;
    return new ConfigError(`${option}: port ${port} on ${host} is taken (EADDRINUSE): choose another, ${suggestion}`, option, { cause: err });
  }
  const reason = typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
  return new ConfigError(`${option}: cannot listen on ${host}:${port} (${reason})`, option, { cause: err });
}

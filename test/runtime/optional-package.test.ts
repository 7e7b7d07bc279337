/**
 * The optional peer dependencies (pg, redis, the OpenTelemetry SDK) as the package finds them: a
 * missing one is a configuration error (exit 2) naming the package and the command that installs it
 * at the range package.json allows. test/package/install.test.ts runs the CLI without them.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, ErrorCodes, hasCode } from '../../src/errors.js';
import { importOptional, isInstalled, missingPackagesError, requirePackages } from '../../src/runtime/optional-package.js';

const peers = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { peerDependencies: Record<string, string> })
  .peerDependencies;

describe('optional packages', () => {
  it('finds an installed package and misses an absent one', () => {
    expect(isInstalled('pg')).toBe(true);
    expect(isInstalled('durable-worker-no-such-package')).toBe(false);
  });

  it('names what is missing and the install command at the ranges package.json allows', () => {
    const err = missingPackagesError(['pg'], '--idempotency postgres://', '--idempotency');
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.option).toBe('--idempotency');
    expect(err.message).toBe(`--idempotency postgres:// needs pg, which is not installed: npm install pg@${peers.pg}`);
    const two = missingPackagesError(['@opentelemetry/sdk-trace-node', 'durable-worker-no-such-package'], '--otel', '--otel');
    expect(two.message).toBe(
      `--otel needs @opentelemetry/sdk-trace-node and durable-worker-no-such-package, which are not installed: npm install @opentelemetry/sdk-trace-node@${peers['@opentelemetry/sdk-trace-node']} durable-worker-no-such-package`,
    );
  });

  it('requirePackages passes when all are there and throws for the missing ones only', () => {
    expect(() => requirePackages(['pg', 'redis'], '--x', '--x')).not.toThrow();
    expect(() => requirePackages(['pg', 'durable-worker-no-such-package'], '--x', '--x')).toThrow(
      /^--x needs durable-worker-no-such-package, which is not installed/,
    );
  });

  it('importOptional turns a missing package into the configuration error, and leaves other failures as they are', async () => {
    const missing = await importOptional(
      'durable-worker-no-such-package',
      'a thing',
      '--thing',
      () => import('durable-worker-no-such-package' as string),
    ).catch((err: unknown) => err);
    expect(hasCode(missing, ErrorCodes.CONFIG)).toBe(true);
    expect((missing as Error).message).toBe('a thing needs durable-worker-no-such-package, which is not installed: npm install durable-worker-no-such-package');
    const broken = Object.assign(new Error('a dependency of pg is missing'), { code: 'ERR_MODULE_NOT_FOUND' });
    await expect(importOptional('pg', 'a postgres:// store', '--idempotency', () => Promise.reject(broken))).rejects.toBe(broken);
    expect(await importOptional('pg', 'a postgres:// store', '--idempotency', async () => 'loaded')).toBe('loaded');
  });
});

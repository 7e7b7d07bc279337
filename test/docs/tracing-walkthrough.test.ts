/**
 * docs/tracing.md's walk-through, its three commands as written (ports swapped for free ones, the
 * worker's stores put in a scratch folder): the receiver prints one trace from the `curl` that ingested
 * an entry to the handler's database span, and the pull's trace linked to it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../fixtures/wait-for.js';
import { ROOT, commandsOf } from './doc-commands.js';

const BIN = `node ${JSON.stringify(join(ROOT, 'bin', 'durable-worker.js'))}`;
const children: ChildProcess[] = [];
// SIGTERM: `dev` drains and ends its own children (a SIGKILL would leave them behind).
afterAll(async () => {
  await Promise.all(
    children
      .filter((child) => child.exitCode === null && child.signalCode === null)
      .map(async (child) => {
        const closed = new Promise((resolve) => child.once('close', resolve));
        child.kill('SIGTERM');
        await closed;
      }),
  );
});

/** A documented command through sh (`npx durable-worker` being this package's bin), its output kept. */
function start(command: string, env: Record<string, string> = {}): { output: () => string; exited: Promise<number | null> } {
  const clean: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('DURABLE_WORKER_') && !key.startsWith('OTEL_')) clean[key] = value;
  // `exec env A=b cmd`: sh's exec takes no assignments of its own.
  const child = spawn('sh', ['-c', `exec env ${command.replace(/^((?:[A-Z_]+=\S+ )*)npx durable-worker/, `$1${BIN}`)}`], {
    cwd: ROOT,
    env: { ...clean, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return { output: () => output, exited: new Promise((resolve) => child.on('close', resolve)) };
}

/** The first match of `pattern` in the output, once there; the output in the error when it never comes. */
function matchOf(proc: { output: () => string }, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
  return waitFor(String(pattern), () => pattern.exec(proc.output()) ?? undefined, timeoutMs).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${proc.output().slice(-3000)}`);
  });
}

describe('docs/tracing.md walk-through', () => {
  it('prints the ingest trace (process span under the curl, the database span under it) and the linked pull', async () => {
    const [receiverCommand, devCommand, curlCommand] = commandsOf('docs/tracing.md').map((c) => c.command);
    expect(receiverCommand).toBe('node examples/tracing/print-traces.mjs');
    expect(devCommand).toMatch(/^OTEL_EXPORTER_OTLP_PROTOCOL=http\/json npx durable-worker dev --otel /);
    expect(curlCommand).toMatch(
      /^curl -s -X POST http:\/\/127\.0\.0\.1:8787\/sources\/products .*traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01/,
    );

    const receiver = start(receiverCommand!, { PORT: '0' });
    const [, receiverUrl] = await matchOf(receiver, /listening on (http:\/\/\S+)/);
    const dir = mkdtempSync(join(tmpdir(), 'dw-doc-tracing-'));
    const dev = start(`${devCommand} --port 0 --metrics-port 0 --metrics-host 127.0.0.1 --idempotency memory --dead-letter file:${join(dir, 'dead.jsonl')}`, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl!,
    });
    const [, emulatorUrl] = await matchOf(dev, /emulator listening on (http:\/\/127\.0\.0\.1:\d+)/);
    await matchOf(dev, /"msg":"worker started"/);

    const curl = start(curlCommand!.replace('http://127.0.0.1:8787', emulatorUrl!));
    expect(await curl.exited, curl.output()).toBe(0);
    expect(JSON.parse(curl.output())).toMatchObject({ sourceId: 'products', acceptedEntryCount: 1 });

    await matchOf(receiver, /trace 4bf92f3577b34da6a3ce929d0e0e4736\n(.+\n){2}/);
    await matchOf(receiver, /└─ receive dev-consumer/);
    const printed = receiver.output();
    const ingestTrace = /trace 4bf92f3577b34da6a3ce929d0e0e4736\n((?:  .+\n?)+)/.exec(printed)![1]!.split('\n').filter(Boolean);
    expect(ingestTrace[0]).toMatch(
      /^  └─ process dev-consumer \[consumer\] [\d.]+ ms \(child of 00f067aa0ba902b7, not exported here\) event_subject=kettle handler=entry-changes outcome=ok link->4bf92f35…\/00f067aa0ba902b7 link->/,
    );
    expect(ingestTrace[1]).toMatch(/^    └─ UPDATE products \[client\] [\d.]+ ms system=postgresql/);
    expect(printed).toMatch(/└─ receive dev-consumer \[consumer\] [\d.]+ ms message_count=1 link->4bf92f35…\/00f067aa0ba902b7\n\s+└─ idempotency claim/);
    expect(printed).toMatch(/└─ settle dev-consumer \[client\] [\d.]+ ms result=committed/);
    // The handler's log line, written by its thread, carries the trace.
    expect(dev.output()).toMatch(
      /"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"[0-9a-f]{16}","trace_flags":"01","entryId":"kettle","msg":"entry saved"/,
    );
  }, 90_000);
});

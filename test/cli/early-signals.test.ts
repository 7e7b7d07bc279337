import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { holdEarlySignals, releaseEarlySignals } from '../../src/cli/early-signals.js';
import { onShutdownSignals } from '../../src/cli/signals.js';

const EARLY_SIGNALS_MODULE = fileURLToPath(new URL('../../src/cli/early-signals.ts', import.meta.url));

describe('signals before the CLI has loaded', () => {
  it('a SIGTERM while held exits 0 instead of killing the process', async () => {
    // The process holds the early handlers and then stays busy "loading", like the bin before main().
    const script = `const m = await import(${JSON.stringify(EARLY_SIGNALS_MODULE)}); m.holdEarlySignals(); console.log('held'); setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
    expect(String(chunk)).toContain('held');
    child.kill('SIGTERM');
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  });

  it('the two-phase handlers take over: the early ones are removed', () => {
    const before = process.listenerCount('SIGTERM');
    holdEarlySignals();
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    const dispose = onShutdownSignals({ first: () => {}, second: () => {} });
    try {
      // The early listener is gone; the two-phase one replaced it.
      expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    } finally {
      dispose();
      releaseEarlySignals();
    }
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });
});

import { describe, expect, it } from 'vitest';
import { runCli } from './cli-process.js';

// The commands' own --help examples are checked in usage.test.ts; this is the top level.
describe('durable-worker --help', () => {
  it('shows examples that start a newcomer off (dev --demo, check, run, <command> --help)', async () => {
    const result = await runCli(['--help']);
    expect(result.code, result.stderr).toBe(0);
    const examples = result.stdout.slice(result.stdout.indexOf('Examples:'));
    expect(result.stdout).toContain('Examples:');
    for (const line of ['durable-worker dev --demo', 'durable-worker check', 'durable-worker run --base-url', 'durable-worker <command> --help'])
      expect(examples).toContain(line);
  });
});

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, run, toolGate } from './tools.js';

const promtool = toolGate('promtool', 'apt-get install prometheus');
const RULES = join(REPO_ROOT, 'deploy', 'prometheus', 'durable-worker-rules.yaml');
const TESTS_DIR = join(REPO_ROOT, 'deploy', 'prometheus', 'tests');
const testFiles = readdirSync(TESTS_DIR).filter((f) => f.endsWith('.yaml'));
const alertNames = [...readFileSync(RULES, 'utf8').matchAll(/^\s+- alert: (\w+)$/gm)].map((m) => m[1]!);

describe.skipIf(promtool.skip)('alert rules (real promtool)', () => {
  it('promtool is installed', () => {
    expect(promtool.path, 'promtool is missing: apt-get install prometheus').toBeDefined();
  });

  it('promtool check rules accepts the rule file', () => {
    const result = run(promtool.path!, ['check', 'rules', RULES]);
    expect(result.stdout + result.stderr).toContain(`SUCCESS: ${alertNames.length} rules found`);
    expect(result.code).toBe(0);
  });

  it('promtool test rules passes every unit test file', () => {
    expect(testFiles.length).toBeGreaterThan(0);
    const result = run(promtool.path!, ['test', 'rules', ...testFiles], { cwd: TESTS_DIR });
    expect(result.stdout + result.stderr).toContain('SUCCESS');
    expect(result.stdout + result.stderr).not.toContain('FAILED');
    expect(result.code).toBe(0);
  });
});

describe('alert rule unit tests cover every alert', () => {
  const tests = testFiles.map((f) => readFileSync(join(TESTS_DIR, f), 'utf8')).join('\n');

  it('the rule file defines the alerts the issue asks for', () => {
    expect(alertNames).toEqual(
      expect.arrayContaining([
        'DurableWorkerConsumerLagGrowing',
        'DurableWorkerStaleAcks',
        'DurableWorkerDeadLetteredEvents',
        'DurableWorkerDeadLetterBacklogGrowing',
        'DurableWorkerDown',
        'DurableWorkerNoSuccessfulPulls',
      ]),
    );
  });

  it.each(alertNames)('%s fires in one scenario and stays silent in another', (alert) => {
    const evaluations = [...tests.matchAll(/- eval_time: \S+\n\s+alertname: (\w+)\n\s+exp_alerts:(.*)/g)].filter((m) => m[1] === alert);
    expect(
      evaluations.some((m) => m[2]!.trim() === '[]'),
      `${alert} has no silent scenario`,
    ).toBe(true);
    expect(
      evaluations.some((m) => m[2]!.trim() === ''),
      `${alert} has no firing scenario`,
    ).toBe(true);
  });
});

/**
 * `promtool check metrics` on an exposition, judged strictly: exit 0, or exit 3 (lint warnings) when
 * every warning is one of prom-client's default `nodejs_active_*_total` gauges (TOOLCHAIN.md), which
 * we do not control. Exit 1 (malformed) or any other warning fails.
 */
import { run } from './tools.js';

export const KNOWN_LINT = /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/;

export interface MetricsVerdict {
  ok: boolean;
  code: number;
  unexpected: string[];
  output: string;
}

export function checkMetrics(promtool: string, exposition: string): MetricsVerdict {
  const result = run(promtool, ['check', 'metrics'], { input: exposition });
  const output = `${result.stdout}${result.stderr}`;
  const lines = output.split('\n').map((l) => l.trim()).filter(Boolean);
  const unexpected = lines.filter((l) => !KNOWN_LINT.test(l));
  const ok = result.code === 0 ? unexpected.length === 0 : result.code === 3 && unexpected.length === 0 && lines.length > 0;
  return { ok, code: result.code, unexpected, output };
}

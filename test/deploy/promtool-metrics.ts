/**
 * `promtool check metrics` on an exposition, judged strictly: exit 0 and not one line of output.
 * Exit 3 is lint (e.g. a gauge named `_total`), exit 1 malformed text; both fail.
 */
import { run } from './tools.js';

export interface MetricsVerdict {
  ok: boolean;
  code: number;
  /** Every line promtool printed: a clean exposition prints none. */
  problems: string[];
  output: string;
}

export function checkMetrics(promtool: string, exposition: string): MetricsVerdict {
  const result = run(promtool, ['check', 'metrics'], { input: exposition });
  const output = `${result.stdout}${result.stderr}`;
  const problems = output
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return { ok: result.code === 0 && problems.length === 0, code: result.code, problems, output };
}

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunLine } from '../fixtures/model-handlers/_plan.js';
import type { DeadLetterLine } from './invariant.js';

/** What the model tests read back after a scenario: the handlers' run lines and a `file:` dead-letter sink. */

/** Every run recorded under `runsDir` (a torn last line of a killed writer is ignored). */
export function readRuns(runsDir: string): RunLine[] {
  if (!existsSync(runsDir)) return [];
  return readdirSync(runsDir).flatMap((name) => readRunFile(join(runsDir, name)));
}

/** The runs of one (event, handler) pair, from its file in the runs directory. */
export function readRunFile(file: string): RunLine[] {
  const out: RunLine[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    try {
      out.push(JSON.parse(line) as RunLine);
    } catch {
      // a line cut by SIGKILL: that run never reported, like one killed before it wrote
    }
  }
  return out;
}

/** The raw lines of a `file:` dead-letter sink (not folded: a record written twice shows twice). */
export function readDeadLetterLines(file: string): DeadLetterLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as DeadLetterLine);
}

/** A few counts of a scenario's outcome, for the test's log. */
export function runStats(runs: readonly RunLine[], deadLetters: readonly DeadLetterLine[]): string {
  const by = (outcome: string) => runs.filter((r) => r.outcome === outcome).length;
  return `${runs.length} runs (ok ${by('ok')}, threw ${by('threw')}, permanent ${by('permanent')}, retry-later ${by('retry-later')}), ${deadLetters.length} dead letter(s)`;
}

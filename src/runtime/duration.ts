/**
 * Durations on the command line: a bare number is seconds (like every other seconds option), or a
 * number with a unit: `500ms`, `30s`, `5m`, `12h`, `7d`.
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

const DURATION_PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;

/** Milliseconds of `value` (number = seconds), or undefined when it is not a duration. */
export function parseDurationMs(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value * 1_000) : undefined;
  if (typeof value !== 'string') return undefined;
  const match = DURATION_PATTERN.exec(value.trim().toLowerCase());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unitMs = UNIT_MS[match[2] ?? 's'] ?? 1_000;
  return Math.round(amount * unitMs);
}

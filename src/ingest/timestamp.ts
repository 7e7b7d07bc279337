/**
 * ISO 8601 timestamps (spec rule 4: Timestamp accepts an "ISO 8601 string"). We accept the
 * extended calendar forms a JSON API meets: `2024-05-01`, `2024-05-01T10:20`, `2024-05-01T10:20:30`,
 * with optional fractions of a second (up to 9 digits) and an optional `Z` or `±hh:mm` / `±hhmm`
 * offset, and check that the date exists (no 2023-02-29, no month 13). Week and ordinal dates are
 * not accepted.
 */
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-](\d{2}):?(\d{2}))?)?$/;

export function isIso8601Timestamp(value: string): boolean {
  const match = ISO_8601.exec(value);
  if (!match) return false;
  const [, year, month, day, hour, minute, second, , zone, offsetHours, offsetMinutes] = match;
  const y = Number(year);
  const m = Number(month);
  const d = Number(day);
  if (m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return false;
  if (hour !== undefined && (Number(hour) > 23 || Number(minute) > 59)) return false;
  if (second !== undefined && Number(second) > 59) return false;
  if (zone !== undefined && zone !== 'Z' && (Number(offsetHours) > 23 || Number(offsetMinutes) > 59)) return false;
  return true;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

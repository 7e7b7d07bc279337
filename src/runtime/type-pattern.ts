/**
 * Event type patterns, as handlers declare them and as dead-letter filters take them: an exact type,
 * `prefix.*` (matches `prefix.` followed by anything), or `*`. Kept apart from the router so the
 * dead-letter sinks and the CLI filter by type without importing the handlers.
 */

/** Why `pattern` is not a valid type pattern, or undefined when it is. */
export function validatePattern(pattern: unknown): string | undefined {
  if (typeof pattern !== 'string' || pattern.length === 0) return 'must be a non-empty string';
  if (/\s/.test(pattern)) return 'must not contain whitespace';
  if (pattern === '*') return undefined;
  const star = pattern.indexOf('*');
  if (star === -1) return undefined;
  if (star !== pattern.length - 1 || !pattern.endsWith('.*') || pattern.length < 3) {
    return "'*' is only allowed alone ('*') or as a final segment ('prefix.*')";
  }
  return undefined;
}

/** True when `type` matches `pattern`. */
export function matchesPattern(pattern: string, type: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return type.startsWith(pattern.slice(0, -1));
  return pattern === type;
}

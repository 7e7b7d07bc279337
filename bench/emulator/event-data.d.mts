/** Types of event-data.mjs (plain JavaScript: bench/dispatch imports it without a TypeScript loader). */
export function eventData(kind: 'small' | 'entry', n: number, subject: string): unknown;

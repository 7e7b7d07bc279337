/** Types of effects.mjs (plain JavaScript: the benchmark's handler module imports it without a TypeScript loader). */
export interface Effects {
  append(id: string): Promise<void>;
  close(): Promise<void>;
}
export function openEffects(path: string): Promise<Effects>;
export function countEffects(path: string): { lines: number; distinct: number };

// Types of scripts/check-imports.mjs for the tests that drive it (test/docs/import-layers.test.ts).
export type ImportKind = 'value' | 'type' | 'dynamic';
export interface Allowance {
  from: string;
  to: string;
  reason: string;
}
export interface Edge {
  from: string;
  to: string;
  kind: ImportKind;
}
export interface Problem {
  kind: 'file circle' | 'folder cycle' | 'upward' | 'unplaced' | 'unresolved' | 'stale allowance';
  text: string;
}
export const LAYERS: string[][];
export const ALLOWED_UPWARD: Allowance[];
export function readImports(text: string, options?: { javascript?: boolean }): { specifier: string; kind: ImportKind }[];
export function unitOf(path: string): string;
export function circles(nodes: string[], arrows: [string, string][]): string[][];
export function buildGraph(root?: string): {
  files: string[];
  edges: Edge[];
  unresolved: { from: string; specifier: string }[];
};
export function check(options?: { root?: string; layers?: string[][]; allowedUpward?: Allowance[] }): {
  files: string[];
  edges: Edge[];
  units: string[];
  unitEdges: Map<string, Edge[]>;
  problems: Problem[];
};

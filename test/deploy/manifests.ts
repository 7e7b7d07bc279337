/**
 * Reading `helm template` output without a YAML library: documents split on `---`, each known by its
 * `# Source:` path and kind; fields are checked with line-anchored regexes on the exact indentation the
 * chart renders, and list entries (env vars, containers) are cut out as indented blocks.
 */
export interface ManifestDoc {
  source: string;
  kind: string;
  name: string;
  text: string;
}

export function splitManifests(output: string): ManifestDoc[] {
  return output
    .split(/^---\s*$/m)
    .map((text) => text.trim())
    .filter((text) => text.length > 0)
    .map((text) => ({
      source: /^# Source: (.+)$/m.exec(text)?.[1] ?? '',
      kind: /^kind: (\S+)$/m.exec(text)?.[1] ?? '',
      name: /^metadata:\n(?: {2}.*\n)*? {2}name: (\S+)$/m.exec(text)?.[1] ?? '',
      text,
    }));
}

export function onlyDoc(docs: readonly ManifestDoc[], kind: string): ManifestDoc {
  const matching = docs.filter((d) => d.kind === kind);
  if (matching.length !== 1) throw new Error(`expected one ${kind}, found ${matching.length}: ${docs.map((d) => d.kind).join(', ')}`);
  return matching[0]!;
}

/**
 * The list item that starts with `- <key>: <value>` (any indentation) and every following line
 * indented deeper than its dash: one env var, one container, one volume.
 */
export function listItem(text: string, key: string, value: string): string | undefined {
  const lines = text.split('\n');
  const pattern = new RegExp(`^(\\s*)- ${escapeRegExp(key)}: "?${escapeRegExp(value)}"?\\s*$`);
  const start = lines.findIndex((line) => pattern.test(line));
  if (start < 0) return undefined;
  const indent = pattern.exec(lines[start]!)![1]!.length;
  const item = [lines[start]!];
  for (const line of lines.slice(start + 1)) {
    const lineIndent = line.length - line.trimStart().length;
    if (line.trim() !== '' && lineIndent <= indent) break;
    item.push(line);
  }
  return item.join('\n');
}

/** The block under `<key>:` (a map key on its own line) up to the next line at its indentation or less. */
export function block(text: string, key: string, from = 0): string | undefined {
  const lines = text.split('\n');
  const pattern = new RegExp(`^(\\s*)(- )?${escapeRegExp(key)}:\\s*$`);
  const start = lines.findIndex((line, i) => i >= from && pattern.test(line));
  if (start < 0) return undefined;
  const match = pattern.exec(lines[start]!)!;
  const indent = match[1]!.length + (match[2] ? 2 : 0);
  const out = [lines[start]!];
  for (const line of lines.slice(start + 1)) {
    const lineIndent = line.length - line.trimStart().length;
    if (line.trim() !== '' && lineIndent <= indent) break;
    out.push(line);
  }
  return out.join('\n');
}

/** The string items of a YAML block list such as the container's `args:`. */
export function listValues(blockText: string): string[] {
  return blockText
    .split('\n')
    .slice(1)
    .map((line) => /^\s*- (.*)$/.exec(line)?.[1])
    .filter((v): v is string => v !== undefined)
    .map((v) => v.replace(/^"(.*)"$/, '$1'));
}

/** Names of the env vars of a block of rendered text. */
export function envNames(text: string): string[] {
  return [...text.matchAll(/^\s*- name: (DURABLE_WORKER_[A-Z_]+)$/gm)].map((m) => m[1]!);
}

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The shell commands of the docs: every line of every ```sh block (indented too) of README.md, docs/*.md and the
 * READMEs of the developer examples, with `\` continuations joined and trailing `# comments` dropped.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The examples of the developer-experience docs (other examples are tested by their own features). */
export const DEVELOPER_EXAMPLES = ['forward-to-webhook', 'platform-api', 'search-index', 'sync-to-postgres', 'typescript-handlers'];

export interface DocCommand {
  file: string;
  command: string;
}

export function docFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  const examples = DEVELOPER_EXAMPLES.map((d) => `examples/${d}/README.md`).filter((f) => existsSync(join(ROOT, f)));
  return ['README.md', ...docs.sort(), ...examples];
}

export function commandsOf(file: string): DocCommand[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out: DocCommand[] = [];
  // Fences may be indented (a block inside a list item); the closing one at the same indentation.
  for (const block of text.matchAll(/^([ \t]*)```(?:sh|bash|shell|console)\n([\s\S]*?)^\1```/gm)) {
    const joined = block[2]!.replace(/\\\n\s*/g, '');
    for (const raw of joined.split('\n')) {
      const line = raw.replace(/\s+#\s.*$/, '').trim();
      if (line === '' || line.startsWith('#')) continue;
      out.push({ file, command: line.replace(/\s+/g, ' ') });
    }
  }
  return out;
}

export function allDocCommands(): DocCommand[] {
  return docFiles().flatMap(commandsOf);
}

/**
 * What test/docs/no-history.test.ts looks for: marks of a project's history or of documents a clone of the
 * repository does not have. A reader of docs/ or of a source comment cannot follow a commit hash, an issue
 * number or a house-style tag; the why belongs in the text itself, citing files in the repository.
 *
 * The rules, and what they leave alone on purpose:
 * - **Commit hash**: a run of hex digits as git shows a commit, abbreviated (7 to 12 digits) or in full (40),
 *   with at least one digit and one letter a-f, standing alone (no word character on either side), so
 *   `deadbeef`, `1234567`, `e2e` and a hex run inside a longer word are not hashes. Left alone: the other
 *   lengths (a W3C span ID has 16 digits, a trace ID or an MD5 32, a sha256 digest 64: a run must stand alone,
 *   so a longer one is never cut into a hash); a run preceded by `#` or `0x` (a colour such as `#a1b2c3`, a hex
 *   literal); a run joined to another by `-` (the parts of a UUID `8-4-4-4-12`, a traceparent
 *   `00-<32>-<16>-01`, a generated ID such as `cf2eeb682e22-1`); a run followed by an ellipsis (an ID shown
 *   elided, `4bf92f35…`); a run after a digest's algorithm name (`sha1:`, `sha256=`...).
 * - **Issue reference**: `issue 12`, `issues 3 and 4`, `Issue #7`, and a bare `#12` (1 to 5 digits after a
 *   space, an opening bracket or the start of the text, and no word character or `-` after them). Left alone:
 *   `hash#1`, `&#123;` (no space before), `# 1` (a Markdown heading or a shell comment), colours of digits only
 *   when they sit in a `color:` declaration.
 * - **Outside citation**: `STYLE 3`, `STYLE 4/8`, `STYLE.md`, the words `CONTRACT` and `TOOLCHAIN` in capitals, and a path into
 *   `../shared`. (The spec the code implements is in the repository: docs/platform-api.md.)
 */
import ts from 'typescript';

export type MarkKind = 'commit hash' | 'issue reference' | 'outside citation';

export interface Mark {
  kind: MarkKind;
  /** The text that matched. */
  text: string;
}

const HEX_RUN = /(?<![\w#-])(?<!0x)(?:[0-9a-f]{7,12}|[0-9a-f]{40})(?![\w-]|…|\.\.\.)/gi;
const DIGEST_BEFORE = /(?:sha|md|blake)\d*[:=-]\s*$/i;
const ISSUE_WORD = /\bissues?\s+#?\d+/gi;
const ISSUE_HASH = /(?<=^|[\s([{,;])#\d{1,5}(?![\w-])/g;
const COLOUR_BEFORE = /colou?r\s*:\s*$/i;
const OUTSIDE = /\bSTYLE(?:\.md\b|\s+\d+(?:\/\d+)*)|\bCONTRACT\b|\bTOOLCHAIN\b|\.\.\/shared\b/g;

/** Every history mark or outside citation in one line of text (a Markdown line, or a comment's line). */
export function marksIn(line: string): Mark[] {
  const marks: Mark[] = [];
  for (const m of line.matchAll(HEX_RUN)) {
    const run = m[0];
    if (!/\d/.test(run) || !/[a-f]/i.test(run)) continue;
    if (DIGEST_BEFORE.test(line.slice(0, m.index))) continue;
    marks.push({ kind: 'commit hash', text: run });
  }
  for (const m of line.matchAll(ISSUE_WORD)) marks.push({ kind: 'issue reference', text: m[0] });
  // A `#12` already counted as part of `issue #12` is blanked out first.
  const rest = line.replace(ISSUE_WORD, (word) => ' '.repeat(word.length));
  for (const m of rest.matchAll(ISSUE_HASH)) {
    if (COLOUR_BEFORE.test(rest.slice(0, m.index))) continue;
    marks.push({ kind: 'issue reference', text: m[0] });
  }
  for (const m of line.matchAll(OUTSIDE)) marks.push({ kind: 'outside citation', text: m[0] });
  return marks;
}

export interface CommentLine {
  /** 1-based line number in the file. */
  line: number;
  text: string;
}

/**
 * The lines of every comment of a TypeScript or JavaScript source (`//`, `/* *\/`, JSDoc), and nothing of its
 * code or its strings. The TypeScript scanner does the lexing; the two choices it cannot make without a parser
 * are made here the usual way: a `/` starts a regular expression unless it follows something that ends a value
 * (a name, a literal, `)`, `]`, `}`), and a `}` closes a template's `${...}` when that is the innermost brace.
 */
export function commentLines(source: string, fileName: string): CommentLine[] {
  const variant = /\.[jt]sx$/.test(fileName) ? ts.LanguageVariant.JSX : ts.LanguageVariant.Standard;
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, variant, source);
  const out: CommentLine[] = [];
  const braces: Array<'code' | 'template'> = [];
  let valueEnded = false;
  // 0-based line of `counted`, the offset up to which newlines are counted.
  let line = 0;
  let counted = 0;
  for (;;) {
    let token = scanner.scan();
    if (token === ts.SyntaxKind.EndOfFileToken) break;
    if (token === ts.SyntaxKind.SingleLineCommentTrivia || token === ts.SyntaxKind.MultiLineCommentTrivia) {
      const start = scanner.getTokenStart();
      line += source.slice(counted, start).split('\n').length - 1;
      counted = start;
      const first = line;
      scanner
        .getTokenText()
        .split('\n')
        .forEach((text, i) => out.push({ line: first + i + 1, text }));
      continue;
    }
    if (
      token === ts.SyntaxKind.WhitespaceTrivia ||
      token === ts.SyntaxKind.NewLineTrivia ||
      token === ts.SyntaxKind.ShebangTrivia ||
      token === ts.SyntaxKind.ConflictMarkerTrivia
    ) {
      continue;
    }
    if ((token === ts.SyntaxKind.SlashToken || token === ts.SyntaxKind.SlashEqualsToken) && !valueEnded) {
      token = scanner.reScanSlashToken();
    }
    if (token === ts.SyntaxKind.CloseBraceToken && braces.at(-1) === 'template') {
      braces.pop();
      token = scanner.reScanTemplateToken(false);
    }
    if (token === ts.SyntaxKind.OpenBraceToken) braces.push('code');
    else if (token === ts.SyntaxKind.CloseBraceToken) braces.pop();
    else if (token === ts.SyntaxKind.TemplateHead || token === ts.SyntaxKind.TemplateMiddle) braces.push('template');
    valueEnded =
      token === ts.SyntaxKind.Identifier ||
      token === ts.SyntaxKind.PrivateIdentifier ||
      token === ts.SyntaxKind.NumericLiteral ||
      token === ts.SyntaxKind.BigIntLiteral ||
      token === ts.SyntaxKind.StringLiteral ||
      token === ts.SyntaxKind.RegularExpressionLiteral ||
      token === ts.SyntaxKind.NoSubstitutionTemplateLiteral ||
      token === ts.SyntaxKind.TemplateTail ||
      token === ts.SyntaxKind.CloseParenToken ||
      token === ts.SyntaxKind.CloseBracketToken ||
      token === ts.SyntaxKind.CloseBraceToken ||
      token === ts.SyntaxKind.ThisKeyword ||
      token === ts.SyntaxKind.SuperKeyword ||
      token === ts.SyntaxKind.NullKeyword ||
      token === ts.SyntaxKind.TrueKeyword ||
      token === ts.SyntaxKind.FalseKeyword ||
      token === ts.SyntaxKind.PlusPlusToken ||
      token === ts.SyntaxKind.MinusMinusToken;
  }
  return out;
}

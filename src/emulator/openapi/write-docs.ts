import { mkdirSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { emulatorOperations } from '../start.js';
import { ingestDocument, platformApiDocument } from './document.js';
import type { JsonSchema } from './json-schema.js';

/**
 * The descriptions the emulator serves, as files under `docs/openapi/` for readers and generators
 * (`npm run docs:openapi`; test/emulator/platform-openapi.test.ts fails when they are stale).
 * The server is the emulator's default address.
 */
export const OPENAPI_DOCS_DIR = new URL('../../../docs/openapi/', import.meta.url);

export function renderOpenApiDocs(): Record<string, string> {
  const operations = emulatorOperations({ logger: undefined });
  const text = (document: JsonSchema) => `${JSON.stringify(document, null, 2)}\n`;
  return { 'ingest.json': text(ingestDocument(operations)), 'platform-api.json': text(platformApiDocument(operations)) };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  mkdirSync(OPENAPI_DOCS_DIR, { recursive: true });
  for (const [name, content] of Object.entries(renderOpenApiDocs())) {
    writeFileSync(new URL(name, OPENAPI_DOCS_DIR), content);
    process.stdout.write(`wrote docs/openapi/${name}\n`);
  }
}

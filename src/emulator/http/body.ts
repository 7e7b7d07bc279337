import type { IncomingMessage } from 'node:http';
import { HttpProblem } from './problem.js';

/** Default ceiling of a request body; configurable per emulator. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** Reads the whole body, answering 413 past `maxBytes` (the socket is drained, not trusted). */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    throw new HttpProblem(413, `Request body exceeds ${maxBytes} bytes.`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      req.resume();
      throw new HttpProblem(413, `Request body exceeds ${maxBytes} bytes.`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Parses a JSON body: 415 for another media type, 400 with `errors.$` for malformed JSON. */
export async function readJson(req: IncomingMessage, maxBytes = DEFAULT_MAX_BODY_BYTES): Promise<unknown> {
  const type = mediaType(req);
  if (type !== 'application/json' && !type.endsWith('+json')) {
    req.resume();
    throw new HttpProblem(415, `Content-Type must be application/json (got ${type || 'none'}).`);
  }
  const raw = await readBody(req, maxBytes);
  if (raw.length === 0) throw new HttpProblem(400, 'A JSON body is required.', { $: ['A JSON body is required.'] });
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new HttpProblem(400, 'The body is not valid JSON.', { $: [(err as Error).message] });
  }
}

/** Parses an `application/x-www-form-urlencoded` body (the issuer's token request). */
export async function readForm(req: IncomingMessage, maxBytes = DEFAULT_MAX_BODY_BYTES): Promise<URLSearchParams> {
  const raw = await readBody(req, maxBytes);
  return new URLSearchParams(raw.toString('utf8'));
}

export function isFormRequest(req: IncomingMessage): boolean {
  return mediaType(req) === 'application/x-www-form-urlencoded';
}

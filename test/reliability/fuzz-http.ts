import fc from 'fast-check';
import { Pool } from 'undici';

/** One generated request. */
export interface FuzzRequest {
  method: 'POST' | 'GET' | 'PUT';
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

export interface FuzzAnswer {
  request: FuzzRequest;
  status: number;
  contentType: string;
  text: string;
}

/** Seed of the fuzz suites: FUZZ_SEED replays a failure; otherwise fixed, so CI is reproducible. */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20_240_607);

/** Header values undici accepts (visible ASCII and spaces), including empty and oversized. */
const headerValue = fc.oneof(
  fc.string({ unit: fc.constantFrom(...' !"#$%&()*+,-./0123456789:;<=>?@ABCXYZ[]^_`abcxyz{|}~'), maxLength: 60 }),
  fc.constant(''),
  fc.constant('x'.repeat(4_000)),
);

/** Authorization variants: the real token most of the time, so the fuzz reaches the handlers. */
export function authHeaders(token: string): fc.Arbitrary<Record<string, string>> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant({ authorization: `Bearer ${token}` }) },
    { weight: 1, arbitrary: fc.constant({}) },
    { weight: 1, arbitrary: headerValue.map((v) => ({ authorization: v })) },
    { weight: 1, arbitrary: headerValue.map((v) => ({ authorization: `Bearer ${v}` })) },
    { weight: 1, arbitrary: headerValue.map((v) => ({ 'x-api-key': v })) },
  );
}

/** Content headers: JSON most of the time, else odd types, charsets and encodings. */
export const contentHeaders: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    'content-type': fc.oneof(
      { weight: 8, arbitrary: fc.constant('application/json') },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          'application/json; charset=utf-8',
          'application/JSON',
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data',
          '',
          'application/problem+json',
          'application/json; charset=latin1',
        ),
      },
      { weight: 1, arbitrary: headerValue },
    ),
    'content-encoding': fc.constantFrom('gzip', 'br', 'identity', 'deflate', 'x-unknown'),
    accept: headerValue,
  },
  { requiredKeys: ['content-type'] },
);

/** JSON-ish bodies: any JSON value, near-valid shapes, broken text, and a few binary blobs. */
export function bodyOf(shaped: fc.Arbitrary<unknown>): fc.Arbitrary<string | Buffer | undefined> {
  return fc.oneof(
    { weight: 6, arbitrary: shaped.map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 2, arbitrary: fc.json({ maxDepth: 4 }) },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
    { weight: 1, arbitrary: shaped.map((v) => (JSON.stringify(v) ?? '{}').slice(0, -1)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        undefined,
        '',
        '{}',
        '[]',
        'null',
        '0',
        '"x"',
        '{"a":'.repeat(2_000),
        `[${'1,'.repeat(30_000)}1]`,
        '1e400',
        '{"__proto__":{"polluted":true}}',
      ),
    },
  );
}

/** Path segments: usual ids, odd characters (percent-encoded), empty and very long ones. */
export const segment: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }).map(encodeURIComponent) },
  { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%00', '..', '.', '%2F', 'a%2Fb', 'x'.repeat(3_000), '%F0%9F%98%80', '%C3%28') },
);

/**
 * Sends every request (keep-alive pool, `concurrency` at once) and returns every answer. A socket
 * error or a missing answer is recorded as status 0: it counts as a failure of the server.
 */
export async function sendAll(origin: string, requests: readonly FuzzRequest[], concurrency = 16): Promise<FuzzAnswer[]> {
  const pool = new Pool(origin, { connections: concurrency, keepAliveTimeout: 10_000 });
  const answers: FuzzAnswer[] = new Array(requests.length);
  let next = 0;
  const lane = async () => {
    for (;;) {
      const i = next++;
      if (i >= requests.length) return;
      const request = requests[i] as FuzzRequest;
      try {
        const res = await pool.request({ method: request.method, path: request.path, headers: request.headers, body: request.body ?? null });
        const text = await res.body.text();
        answers[i] = { request, status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), text };
      } catch (err) {
        answers[i] = { request, status: 0, contentType: '', text: String(err) };
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, lane));
  } finally {
    await pool.close();
  }
  return answers;
}

/** What must hold for every answer: no 5xx, no dropped request, errors as problem+json with their status. */
export function violations(answers: readonly FuzzAnswer[]): string[] {
  const out: string[] = [];
  for (const a of answers) {
    let why: string | undefined;
    if (a.status === 0) why = `no answer (${a.text.slice(0, 100)})`;
    else if (a.status >= 500) why = `${a.status}`;
    else if (a.status >= 400) {
      if (a.contentType !== 'application/problem+json') why = `${a.status} with content-type "${a.contentType}"`;
      else {
        try {
          const problem = JSON.parse(a.text) as { status?: unknown; title?: unknown };
          if (problem.status !== a.status || typeof problem.title !== 'string') why = `${a.status} problem with status ${String(problem.status)}`;
        } catch {
          why = `${a.status} problem body is not JSON`;
        }
      }
    }
    if (why !== undefined) {
      const body = a.request.body === undefined ? '' : String(a.request.body).slice(0, 200);
      out.push(`${why}: ${a.request.method} ${a.request.path.slice(0, 200)} ${JSON.stringify(a.request.headers).slice(0, 200)} ${body}`);
    }
  }
  return out;
}

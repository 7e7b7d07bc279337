// @ts-check
/** Calls to the console's JSON API. A refusal comes back as a Problem with the server's `errors` by path. */

export class Problem extends Error {
  /**
   * @param {number} status
   * @param {string} detail
   * @param {Record<string, string[]>} [errors]
   */
  constructor(status, detail, errors) {
    super(detail);
    this.status = status;
    this.errors = errors ?? {};
  }
}

/**
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<any>}
 */
export async function call(method, path, body) {
  /** @type {RequestInit} */
  const init = { method, headers: { accept: 'application/json' } };
  // Every change is JSON, even an empty one: the server refuses anything else (cross-site forms).
  if (method !== 'GET') init.headers = { ...init.headers, 'content-type': 'application/json' };
  if (method !== 'GET') init.body = JSON.stringify(body ?? {});
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    throw new Problem(0, `the console did not answer (${err instanceof Error ? err.message : String(err)})`);
  }
  const text = await res.text();
  const parsed = text === '' ? undefined : JSON.parse(text);
  if (!res.ok) throw new Problem(res.status, parsed?.detail ?? `${method} ${path} answered ${res.status}`, parsed?.errors);
  return parsed;
}

/** @param {string} path */
export const get = (path) => call('GET', path);

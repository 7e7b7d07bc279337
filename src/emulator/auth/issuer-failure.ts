/**
 * An issuer error answer: status plus the issuer body `{error, error_description}` (spec, Token
 * responses). The spec shows no codes; we use those of RFC 6749 §4.1.2.1 and §5.2, RFC 7636 and RFC 8707.
 */
export class IssuerFailure extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

/**
 * One request parameter (form field or query parameter). RFC 6749 §3.1 and §3.2: parameters must
 * not be repeated. An empty value counts as absent.
 */
export function singleParam(params: URLSearchParams, name: string, required: boolean): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw new IssuerFailure(400, 'invalid_request', `${name} must not be repeated.`);
  const value = values[0];
  if ((value === undefined || value === '') && required) throw new IssuerFailure(400, 'invalid_request', `${name} is required.`);
  return value === '' ? undefined : value;
}

/** RFC 6749 §3.3: a `scope` parameter is a space-delimited list; each scope once, in request order. */
export function scopeList(scope: string | undefined): string[] {
  return scope === undefined ? [] : [...new Set(scope.split(' ').filter((name) => name !== ''))];
}

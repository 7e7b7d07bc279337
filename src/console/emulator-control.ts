import type { PlatformClient } from '../client/index.js';
import type { EmulatorStateSummary } from '../emulator/summary.js';
import type { FaultOptions } from '../emulator/faults/options.js';
import { HttpProblem } from '../emulator/http/problem.js';
import type { TypedIngestRequest, TypedIngestResponse } from '../types.js';

/** Admin calls never wait longer than this: the page must not hang on a stuck emulator. */
const ADMIN_TIMEOUT_MS = 5_000;

export interface EmulatorControlOptions {
  /** The emulator's origin (public API, issuer and `/_emulator` routes). */
  url: string;
  destination: string;
  /** A platform client with the dev credentials: pause, resume and ingest are public routes. */
  client: Pick<PlatformClient, 'pause' | 'resume' | 'ingest' | 'close'>;
}

/**
 * What the Consumer and Send pages do to the emulator, over HTTP as any tool could: the emulator's
 * own routes (`GET /_emulator/state`, `/_emulator/faults`; loopback, no credential) and the public
 * API with a token (pause, resume, typed ingest). An answer of the emulator that refuses the input
 * comes back as an HttpProblem with the emulator's status and `errors`, for the page to show by field.
 */
export class EmulatorControl {
  readonly url: string;
  readonly destination: string;
  readonly #client: EmulatorControlOptions['client'];

  constructor(options: EmulatorControlOptions) {
    this.url = options.url.replace(/\/$/, '');
    this.destination = options.destination;
    this.#client = options.client;
  }

  state(): Promise<EmulatorStateSummary> {
    return this.#admin('GET', '/_emulator/state') as Promise<EmulatorStateSummary>;
  }

  faults(): Promise<FaultOptions> {
    return this.#admin('GET', '/_emulator/faults') as Promise<FaultOptions>;
  }

  setFaults(faults: FaultOptions): Promise<FaultOptions> {
    return this.#admin('POST', '/_emulator/faults', faults) as Promise<FaultOptions>;
  }

  async clearFaults(): Promise<void> {
    await this.#admin('DELETE', '/_emulator/faults');
  }

  async setPaused(paused: boolean): Promise<void> {
    await this.#call(() => (paused ? this.#client.pause(this.destination) : this.#client.resume(this.destination)));
  }

  /** Sent as given (no client-side check): the page shows the emulator's own validation errors. */
  ingest(sourceId: string, request: TypedIngestRequest): Promise<TypedIngestResponse> {
    return this.#call(() => this.#client.ingest(sourceId, request, { validate: false }));
  }

  close(): Promise<void> {
    return this.#client.close();
  }

  async #admin(method: string, path: string, body?: unknown): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${this.url}${path}`, {
        method,
        signal: AbortSignal.timeout(ADMIN_TIMEOUT_MS),
        ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
    } catch (err) {
      throw new HttpProblem(502, `the emulator at ${this.url} did not answer ${method} ${path}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw new HttpProblem(502, `the emulator at ${this.url} answered ${method} ${path} with ${res.status} and a body that is not JSON`);
    }
    if (!res.ok) throw problemFrom(res.status, parsed, `${method} ${path}`);
    return parsed;
  }

  /** A refusal of the platform client (ApiError with the emulator's problem) as an HttpProblem. */
  async #call<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      const { status, problem, message } = err as { status?: unknown; problem?: unknown; message?: unknown };
      if (typeof status === 'number' && status >= 400) throw problemFrom(status, problem, String(message));
      throw new HttpProblem(502, `the emulator at ${this.url} failed: ${String(message ?? err)}`);
    }
  }
}

function problemFrom(status: number, body: unknown, what: string): HttpProblem {
  const problem = (typeof body === 'object' && body !== null ? body : {}) as { detail?: unknown; errors?: unknown };
  const detail = typeof problem.detail === 'string' ? problem.detail : `the emulator answered ${status} to ${what}`;
  const errors = typeof problem.errors === 'object' && problem.errors !== null ? (problem.errors as Record<string, string[]>) : undefined;
  // A 5xx of the emulator (an injected fault, say) is the upstream's failure, not the page's.
  return new HttpProblem(status >= 500 ? 502 : status, detail, errors);
}

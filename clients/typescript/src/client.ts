/**
 * `SandboxClient`: one method per route of a sandbox node's HTTP JSON API.
 *
 * No dependencies: the global `fetch`, web streams, `TextDecoder` and
 * `atob` of Node >= 20 (or any runtime that has them).
 */
import { bytesToText, fillText, toBytes } from './bytes.js';
import { SandboxError } from './errors.js';
import { readNdjson } from './ndjson.js';
import { encodePath } from './paths.js';
import type {
  Env,
  ExecChunk,
  ExecResult,
  ExecStreamEvent,
  FileContent,
  Isolation,
  ListDone,
  ListEntry,
  ProcessInfo,
  ProcessOutput,
  RemoveResult,
  SessionInfo,
  StatInfo,
  StopReceipt,
  TextContent,
  WriteResult,
} from './types.js';

/** The fetch function the client calls (the global one by default). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface SandboxClientOptions {
  /** The node's address, e.g. `http://127.0.0.1:8080` (a path prefix is kept). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer TOKEN` on every request. */
  token: string;
  /** Another fetch (a mock, or undici's with a dispatcher of your own). */
  fetch?: FetchLike;
  /** Headers added to every request. */
  headers?: Record<string, string>;
}

/** Every call takes an optional AbortSignal; aborting it aborts the request. */
export interface CallOptions {
  signal?: AbortSignal;
}

export interface CreateSessionOptions extends CallOptions {
  working_directory?: string;
  env?: Env;
  isolation?: Isolation;
}

export interface ExecOptions extends CallOptions {
  /** Relative to the session's working directory, or absolute. */
  cwd?: string;
  /** Merged over the session's environment. */
  env?: Env;
  /** Seconds; the node ends the command then (`exit_reason: "timeout"`, exit code 124). */
  timeout?: number;
}

export interface StartProcessOptions extends ExecOptions {
  /** Keep stdin open as a pipe for `writeStdin` (else it is /dev/null). */
  stdin?: boolean;
  /** How many bytes of output the node keeps for `readProcessOutput`. */
  retain?: number;
  /** Run on a pseudo-terminal (output comes as stream `pty`). */
  tty?: boolean;
  rows?: number;
  cols?: number;
}

export interface ReadOutputOptions extends CallOptions {
  /** The first byte wanted (a process's output is one log of absolute offsets). */
  offset?: number;
  /** Seconds to wait for output when there is none yet (fractional, at most 300). */
  wait?: number;
  /** At most this many bytes. */
  max?: number;
}

export interface WriteStdinOptions extends CallOptions {
  /** Close stdin after writing. */
  eof?: boolean;
}

export interface ReadFileOptions extends CallOptions {
  /** Only lines `start_line`..`end_line` (1-based). */
  startLine?: number;
  endLine?: number;
}

export interface WriteFileOptions extends CallOptions {
  /** Write only if the file's version is this one (else 412 `precondition_failed`). */
  ifMatch?: string;
  /** `"*"`: write only if the file does not exist (else 412 `precondition_failed`). */
  ifNoneMatch?: string;
}

export interface ListOptions extends CallOptions {
  /** How deep to descend (1: the directory's own entries). */
  depth?: number;
}

/** The body of `PUT …/files/{path}`. */
export type FileBody = string | Uint8Array | ReadableStream<Uint8Array>;

type Query = Record<string, string | number | boolean | undefined>;

interface SendInit extends CallOptions {
  query?: Query;
  json?: unknown;
  body?: FileBody;
  headers?: Record<string, string>;
  accept?: string;
}

function sessionPath(id: string, ...rest: string[]): string {
  return `/v1/sessions/${encodeURIComponent(id)}${rest.join('')}`;
}

function stripQuotes(etag: string | null): string | undefined {
  if (etag === null) return undefined;
  let v = etag.trim();
  if (v.startsWith('W/')) v = v.slice(2);
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
  return v;
}

function quoteEtag(version: string): string {
  if (version === '*' || version.startsWith('"') || version.startsWith('W/"')) return version;
  return `"${version}"`;
}

function execBody(options: ExecOptions | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (options?.cwd !== undefined) body['cwd'] = options.cwd;
  if (options?.env !== undefined) body['env'] = options.env;
  if (options?.timeout !== undefined) body['timeout'] = options.timeout;
  return body;
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
}

export class SandboxClient {
  readonly baseUrl: string;
  private readonly token: string;
  private readonly fetchFn: FetchLike;
  private readonly extraHeaders: Record<string, string>;

  constructor(options: SandboxClientOptions);
  constructor(baseUrl: string, token: string);
  constructor(optionsOrUrl: SandboxClientOptions | string, token?: string) {
    const options: SandboxClientOptions =
      typeof optionsOrUrl === 'string' ? { baseUrl: optionsOrUrl, token: token ?? '' } : optionsOrUrl;
    if (!options.baseUrl) throw new TypeError('SandboxClient: baseUrl is required');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.token = options.token;
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    this.extraHeaders = { ...(options.headers ?? {}) };
  }

  // ---- sessions ----

  /** `POST /v1/sessions` */
  async createSession(options?: CreateSessionOptions): Promise<SessionInfo> {
    const body: Record<string, unknown> = {};
    if (options?.working_directory !== undefined) body['working_directory'] = options.working_directory;
    if (options?.env !== undefined) body['env'] = options.env;
    if (options?.isolation !== undefined) body['isolation'] = options.isolation;
    return this.json('POST', '/v1/sessions', { json: body, signal: options?.signal });
  }

  /** `GET /v1/sessions` */
  async listSessions(options?: CallOptions): Promise<SessionInfo[]> {
    const answer = await this.json<{ sessions: SessionInfo[] }>('GET', '/v1/sessions', options);
    return answer.sessions;
  }

  /** `GET /v1/sessions/{id}` */
  async getSession(id: string, options?: CallOptions): Promise<SessionInfo> {
    return this.json('GET', sessionPath(id), options);
  }

  /** `DELETE /v1/sessions/{id}`: ends every process of the session. */
  async stopSession(id: string, options?: CallOptions): Promise<StopReceipt> {
    return this.json('DELETE', sessionPath(id), options);
  }

  // ---- execution ----

  /**
   * `POST /v1/sessions/{id}/exec`: runs `command` with the session's shell
   * and answers when it has ended. A non-zero exit code is a result, not an
   * error.
   */
  async exec(session: string, command: string, options?: ExecOptions): Promise<ExecResult> {
    const result = await this.json<ExecResult>('POST', sessionPath(session, '/exec'), {
      json: { command, ...execBody(options) },
      signal: options?.signal,
    });
    return fillText(result);
  }

  /**
   * `POST /v1/sessions/{id}/exec` with `Accept: application/x-ndjson`:
   * yields `chunk` objects as output arrives, then one `result` (without
   * stdout/stderr). An `error` line throws `SandboxError`. The request is
   * sent when iteration starts; leaving the loop early closes it.
   */
  execStream(session: string, command: string, options?: ExecOptions): AsyncGenerator<ExecStreamEvent, void, undefined> {
    return this.execLines(sessionPath(session, '/exec'), { command, ...execBody(options) }, options?.signal);
  }

  /** `POST /v1/sessions/{id}/code`: runs `code` with the interpreter `language` ("python", "bash", "node", …). */
  async code(session: string, code: string, language: string, options?: ExecOptions): Promise<ExecResult> {
    const result = await this.json<ExecResult>('POST', sessionPath(session, '/code'), {
      json: { code, language, ...execBody(options) },
      signal: options?.signal,
    });
    return fillText(result);
  }

  /** `POST /v1/sessions/{id}/code`, streamed as `execStream` is. */
  codeStream(
    session: string,
    code: string,
    language: string,
    options?: ExecOptions,
  ): AsyncGenerator<ExecStreamEvent, void, undefined> {
    return this.execLines(sessionPath(session, '/code'), { code, language, ...execBody(options) }, options?.signal);
  }

  // ---- processes ----

  /** `POST /v1/sessions/{id}/processes`: starts a process and answers at once. */
  async startProcess(session: string, command: string, options?: StartProcessOptions): Promise<ProcessInfo> {
    const body: Record<string, unknown> = { command, ...execBody(options) };
    for (const key of ['stdin', 'retain', 'tty', 'rows', 'cols'] as const) {
      if (options?.[key] !== undefined) body[key] = options[key];
    }
    return this.json('POST', sessionPath(session, '/processes'), { json: body, signal: options?.signal });
  }

  /** `GET /v1/sessions/{id}/processes` */
  async listProcesses(session: string, options?: CallOptions): Promise<ProcessInfo[]> {
    const answer = await this.json<{ processes: ProcessInfo[] }>('GET', sessionPath(session, '/processes'), options);
    return answer.processes;
  }

  /**
   * `GET /v1/sessions/{id}/processes/{pid}/output?offset&wait&max`: the
   * output from `offset` on; with `wait`, waits that many seconds for some.
   */
  async readProcessOutput(session: string, processId: string, options?: ReadOutputOptions): Promise<ProcessOutput> {
    const out = await this.json<ProcessOutput>(
      'GET',
      sessionPath(session, '/processes/', encodeURIComponent(processId), '/output'),
      { query: { offset: options?.offset, wait: options?.wait, max: options?.max }, signal: options?.signal },
    );
    return fillText(out);
  }

  /** `POST /v1/sessions/{id}/processes/{pid}/stdin[?eof=1]`: raw bytes to the process's stdin. */
  async writeStdin(
    session: string,
    processId: string,
    data: string | Uint8Array,
    options?: WriteStdinOptions,
  ): Promise<void> {
    await this.json('POST', sessionPath(session, '/processes/', encodeURIComponent(processId), '/stdin'), {
      body: toBytes(data),
      query: { eof: options?.eof ? 1 : undefined },
      signal: options?.signal,
    });
  }

  /** `POST /v1/sessions/{id}/processes/{pid}/signal`: `"TERM"`, `"KILL"`, `"INT"`, … or a number. */
  async signalProcess(session: string, processId: string, signal: string | number, options?: CallOptions): Promise<void> {
    await this.json('POST', sessionPath(session, '/processes/', encodeURIComponent(processId), '/signal'), {
      json: { signal },
      signal: options?.signal,
    });
  }

  /** `POST /v1/sessions/{id}/processes/{pid}/resize`: a tty process's terminal size. */
  async resizeProcess(
    session: string,
    processId: string,
    rows: number,
    cols: number,
    options?: CallOptions,
  ): Promise<void> {
    await this.json('POST', sessionPath(session, '/processes/', encodeURIComponent(processId), '/resize'), {
      json: { rows, cols },
      signal: options?.signal,
    });
  }

  // ---- files ----

  /** `GET /v1/sessions/{id}/files/{path}`: the bytes and the version (ETag). */
  async readFile(session: string, path: string, options?: ReadFileOptions): Promise<FileContent> {
    const res = await this.send('GET', sessionPath(session, '/files/', encodePath(path)), {
      accept: 'application/octet-stream',
      query: { start_line: options?.startLine, end_line: options?.endLine },
      signal: options?.signal,
    });
    const data = new Uint8Array(await res.arrayBuffer());
    return { data, version: stripQuotes(res.headers.get('etag')) };
  }

  /** `readFile` decoded as UTF-8 (U+FFFD for bytes that are not). */
  async readText(session: string, path: string, options?: ReadFileOptions): Promise<TextContent> {
    const { data, version } = await this.readFile(session, path, options);
    return { text: bytesToText(data), version };
  }

  /**
   * `PUT /v1/sessions/{id}/files/{path}`: writes the file atomically,
   * making its parent directories. `ifMatch: version` writes only over that
   * version, `ifNoneMatch: "*"` only when there is no file; otherwise 412.
   */
  async writeFile(session: string, path: string, body: FileBody, options?: WriteFileOptions): Promise<WriteResult> {
    const headers: Record<string, string> = {};
    if (options?.ifMatch !== undefined) headers['If-Match'] = quoteEtag(options.ifMatch);
    if (options?.ifNoneMatch !== undefined) headers['If-None-Match'] = quoteEtag(options.ifNoneMatch);
    const out = await this.json<WriteResult>('PUT', sessionPath(session, '/files/', encodePath(path)), {
      body,
      headers,
      signal: options?.signal,
    });
    return fillText(out);
  }

  /** `DELETE /v1/sessions/{id}/files/{path}` */
  async removeFile(session: string, path: string, options?: CallOptions): Promise<RemoveResult> {
    return fillText(await this.json<RemoveResult>('DELETE', sessionPath(session, '/files/', encodePath(path)), options));
  }

  /**
   * `GET /v1/sessions/{id}/list/{path}?depth=N`: yields the `entry` frames
   * as they arrive and returns the `done` frame (`count`, and `error` when
   * the listing stopped early: that is not thrown). With `for await` the
   * done frame is dropped; `listAll` keeps it.
   */
  async *listFiles(session: string, path: string, options?: ListOptions): AsyncGenerator<ListEntry, ListDone, undefined> {
    const res = await this.send('GET', sessionPath(session, '/list/', encodePath(path)), {
      accept: 'application/x-ndjson',
      query: { depth: options?.depth },
      signal: options?.signal,
    });
    for await (const line of readNdjson(res, options?.signal)) {
      const frame = line as { type?: unknown };
      if (frame.type === 'entry') yield fillText(line as ListEntry);
      else if (frame.type === 'done') return line as ListDone;
      else if (frame.type === 'error') throw SandboxError.fromStreamLine(line as object);
      // other line types: ignored (room for the API to grow)
    }
    throw new SandboxError(0, 'incomplete_stream', 'the listing ended before its done line');
  }

  /** `listFiles` collected: every entry, and the done frame. */
  async listAll(session: string, path: string, options?: ListOptions): Promise<{ entries: ListEntry[]; done: ListDone }> {
    const entries: ListEntry[] = [];
    const it = this.listFiles(session, path, options);
    for (;;) {
      const step = await it.next();
      if (step.done) return { entries, done: step.value };
      entries.push(step.value);
    }
  }

  /** `GET /v1/sessions/{id}/stat/{path}` */
  async stat(session: string, path: string, options?: CallOptions): Promise<StatInfo> {
    return fillText(await this.json<StatInfo>('GET', sessionPath(session, '/stat/', encodePath(path)), options));
  }

  // ---- the API itself ----

  /** `GET /v1/openapi.json` */
  async openapi(options?: CallOptions): Promise<Record<string, unknown>> {
    return this.json('GET', '/v1/openapi.json', options);
  }

  // ---- plumbing ----

  private async *execLines(
    path: string,
    body: Record<string, unknown>,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<ExecStreamEvent, void, undefined> {
    const res = await this.send('POST', path, { json: body, accept: 'application/x-ndjson', signal });
    const type = res.headers.get('content-type') ?? '';
    if (type.startsWith('application/json')) {
      // A node that answered with the whole result: give it as a stream.
      const result = fillText((await res.json()) as ExecResult);
      const { stdout, stderr, stdout_b64: _o, stderr_b64: _e, ...rest } = result;
      if (stdout) yield { type: 'chunk', stream: 'stdout', data: stdout, ...(_o ? { data_b64: _o } : {}) };
      if (stderr) yield { type: 'chunk', stream: 'stderr', data: stderr, ...(_e ? { data_b64: _e } : {}) };
      yield rest;
      return;
    }
    for await (const line of readNdjson(res, signal)) {
      const frame = line as { type?: unknown };
      if (frame.type === 'chunk') yield fillText(line as ExecChunk);
      else if (frame.type === 'result') {
        yield line as ExecStreamEvent;
        return;
      } else if (frame.type === 'error') throw SandboxError.fromStreamLine(line as object);
      // other line types (a keep-alive, say): ignored
    }
    throw new SandboxError(0, 'incomplete_stream', 'the execution stream ended before its result line');
  }

  private async json<T>(method: string, path: string, init?: SendInit): Promise<T> {
    const res = await this.send(method, path, init ?? {});
    const text = await res.text();
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new SandboxError(res.status, 'bad_response', `${method} ${path}: the answer is not JSON: ${text.slice(0, 200)}`, {
        cause: err,
      });
    }
  }

  /** Sends a request; a non-2xx answer throws `SandboxError` from its JSON error body. */
  private async send(method: string, path: string, init: SendInit): Promise<Response> {
    let url = this.baseUrl + path;
    if (init.query) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(init.query)) {
        if (value !== undefined) params.set(key, String(value));
      }
      const qs = params.toString();
      if (qs) url += `?${qs}`;
    }
    const headers: Record<string, string> = {
      ...this.extraHeaders,
      Authorization: `Bearer ${this.token}`,
      Accept: init.accept ?? 'application/json',
      ...(init.headers ?? {}),
    };
    const request: RequestInit & { duplex?: 'half' } = { method, headers };
    if (init.signal) request.signal = init.signal;
    if (init.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      request.body = JSON.stringify(init.json);
    } else if (init.body !== undefined) {
      headers['Content-Type'] = 'application/octet-stream';
      if (typeof init.body === 'string' || init.body instanceof Uint8Array) {
        request.body = toBytes(init.body);
      } else {
        request.body = init.body;
        request.duplex = 'half'; // a stream body: fetch requires it
      }
    }

    let res: Response;
    try {
      res = await this.fetchFn(url, request);
    } catch (err) {
      if (isAbort(err)) throw err;
      const reason = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
      throw new SandboxError(0, 'network_error', `${method} ${url}: ${reason}`, { cause: err });
    }
    if (res.ok) return res;

    const text = await res.text().catch(() => '');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const e = body as Partial<{ code: unknown; message: unknown }> | undefined;
    const code = typeof e?.code === 'string' ? e.code : `http_${res.status}`;
    const message = typeof e?.message === 'string' ? e.message : text || res.statusText || `HTTP ${res.status}`;
    throw new SandboxError(res.status, code, message, { body: body ?? text });
  }
}


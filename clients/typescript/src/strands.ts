/**
 * `@sandbox/client/strands`: a Strands Agents `Sandbox` whose commands and
 * files live in a session of a sandbox node.
 *
 * ```ts
 * const agent = new Agent({ model, sandbox: new NodeSandbox({ url, token }) })
 * ```
 *
 * This entry point imports `@strands-agents/sdk` (an optional peer
 * dependency: the SDK the application already has, so that `NodeSandbox`
 * extends the very `Sandbox` class the agent and its tools check with
 * `instanceof`). The main entry point, `@sandbox/client`, imports nothing.
 */
import {
  Sandbox,
  SandboxAbortError,
  SandboxPathNotFoundError,
  SandboxTimeoutError,
  type ExecuteOptions,
  type ExecutionResult,
  type FileInfo,
  type StreamChunk,
  type Tool,
} from '@strands-agents/sdk';
import { makeFileEditor, DEFAULT_FILE_EDITOR_DESCRIPTION } from '@strands-agents/sdk/vended-tools/file-editor';
import { makeShell, SANDBOX_SHELL_DESCRIPTION } from '@strands-agents/sdk/vended-tools/shell';
import { SandboxClient, type ExecOptions, type FetchLike } from './client.js';
import { SandboxError } from './errors.js';
import { joinPath, resolvePath } from './paths.js';
import type { Env, ExecStreamEvent, Isolation, ListEntry, SessionInfo, StopReceipt } from './types.js';

/** The interpreter names the local sandbox accepts (the node checks the same). */
const LANGUAGE_PATTERN = /^[a-zA-Z0-9._-]+$/;

export interface NodeSandboxOptions {
  /** The node's address, e.g. `http://127.0.0.1:8080`. Not needed with `client`. */
  url?: string;
  /** The node's bearer token. Not needed with `client`. */
  token?: string;
  /** A client to use instead of one made from `url` and `token`. */
  client?: SandboxClient;
  /** A fetch for the client made from `url` and `token`. */
  fetch?: FetchLike;
  /**
   * Use this existing session instead of creating one. `close()` leaves it
   * running: it is not this object's to stop.
   */
  sessionId?: string;
  /** How to create the session (when no `sessionId` is given). */
  session?: {
    working_directory?: string;
    env?: Env;
    isolation?: Isolation;
  };
  /**
   * Vend the `sandbox_shell` and `sandbox_file_editor` tools to the agent,
   * as the SDK's Docker and SSH sandboxes do (default true).
   */
  tools?: boolean;
}

function isPathNotFound(err: unknown): boolean {
  return err instanceof SandboxError && err.code === 'path_not_found';
}

/**
 * A Strands `Sandbox` on a sandbox node. The session is created on first
 * use (or `start()`), or an existing one is used (`sessionId`); `close()`
 * stops the session if this object created it.
 *
 * Relative paths and `cwd`s resolve against the session's working
 * directory, as the local sandbox resolves them against `process.cwd()`.
 */
export class NodeSandbox extends Sandbox {
  /** The HTTP client, for what the Sandbox interface does not cover (processes, stat, versions). */
  readonly client: SandboxClient;
  private readonly options: NodeSandboxOptions;
  private info: SessionInfo | undefined;
  private pending: Promise<SessionInfo> | undefined;
  private created = false;
  private closed = false;

  constructor(options: NodeSandboxOptions) {
    super();
    this.options = options;
    if (options.client) {
      this.client = options.client;
    } else {
      if (!options.url) throw new TypeError('NodeSandbox: url (or client) is required');
      this.client = new SandboxClient({
        baseUrl: options.url,
        token: options.token ?? '',
        ...(options.fetch ? { fetch: options.fetch } : {}),
      });
    }
  }

  /** The session's id: the given one, or the created one once `start()` (or any call) made it. */
  get sessionId(): string | undefined {
    return this.info?.id ?? this.options.sessionId;
  }

  /** The session, once known. */
  get session(): SessionInfo | undefined {
    return this.info;
  }

  /**
   * Creates the session (or fetches the given one) if that has not happened
   * yet, and returns it. Every other method calls this first; call it
   * yourself before building the Agent to have the working directory named
   * in the tools' descriptions.
   */
  async start(): Promise<SessionInfo> {
    if (this.closed) throw new Error('NodeSandbox is closed');
    if (this.info) return this.info;
    if (!this.pending) {
      const attempt = (async () => {
        if (this.options.sessionId !== undefined) return this.client.getSession(this.options.sessionId);
        const s = this.options.session;
        const info = await this.client.createSession({
          ...(s?.working_directory !== undefined ? { working_directory: s.working_directory } : {}),
          ...(s?.env !== undefined ? { env: s.env } : {}),
          ...(s?.isolation !== undefined ? { isolation: s.isolation } : {}),
        });
        this.created = true;
        return info;
      })();
      this.pending = attempt;
      attempt.then(
        (info) => {
          this.info = info;
        },
        () => {
          if (this.pending === attempt) this.pending = undefined; // let a later call try again
        },
      );
    }
    return this.pending;
  }

  /**
   * Stops the session if this object created it (its processes end) and
   * returns the node's receipt; a session given by `sessionId` is left
   * running. The sandbox cannot be used afterwards.
   */
  async close(): Promise<StopReceipt | undefined> {
    if (this.closed) return undefined;
    let info: SessionInfo | undefined;
    try {
      info = this.info ?? (this.pending ? await this.pending : undefined);
    } catch {
      info = undefined; // the creation failed: nothing to stop
    }
    this.closed = true;
    if (!info || !this.created) return undefined;
    return this.client.stopSession(info.id);
  }

  // ---- the Sandbox interface ----

  /**
   * `POST …/exec` streamed: a `streamChunk` per chunk of output as it
   * arrives, then the `executionResult` with the exit code and all of the
   * output. A timeout throws `SandboxTimeoutError` with the output so far,
   * an aborted `signal` throws `SandboxAbortError`, as the local sandbox does.
   */
  async *executeStreaming(command: string, options?: ExecuteOptions): AsyncGenerator<StreamChunk | ExecutionResult, void, undefined> {
    yield* this.run((id, opts) => this.client.execStream(id, command, opts), options);
  }

  /** `POST …/code` streamed, as `executeStreaming`. */
  async *executeCodeStreaming(
    code: string,
    language: string,
    options?: ExecuteOptions,
  ): AsyncGenerator<StreamChunk | ExecutionResult, void, undefined> {
    if (!LANGUAGE_PATTERN.test(language)) {
      throw new Error(`language parameter contains invalid characters: ${language}`);
    }
    yield* this.run((id, opts) => this.client.codeStream(id, code, language, opts), options);
  }

  /** `GET …/files/{path}` */
  async readFile(path: string): Promise<Uint8Array> {
    const { id, abs } = await this.locate(path);
    return (await this.client.readFile(id, abs)).data;
  }

  /** `PUT …/files/{path}`: atomic; the node makes the parent directories. */
  async writeFile(path: string, content: Uint8Array): Promise<void> {
    const { id, abs } = await this.locate(path);
    await this.client.writeFile(id, abs, content);
  }

  /** `DELETE …/files/{path}` */
  async removeFile(path: string): Promise<void> {
    const { id, abs } = await this.locate(path);
    await this.client.removeFile(id, abs);
  }

  /**
   * `GET …/list/{path}/?depth=1`: the directory's entries, sorted by name.
   * The path is sent with a trailing slash so that a regular file (like a
   * missing path) is `SandboxPathNotFoundError`, as in the local sandbox. A
   * symlink's `isDir`/`size` are its target's (one `stat` of `link/`); when
   * that fails (a dangling link, a link to a file) only its name is given.
   */
  async listFiles(path: string): Promise<FileInfo[]> {
    const { id, abs } = await this.locate(path);
    const dir = abs.endsWith('/') ? abs : `${abs}/`;
    let entries: ListEntry[];
    try {
      const { entries: all, done } = await this.client.listAll(id, dir, { depth: 1 });
      if (done.error) {
        if (done.error.code === 'path_not_found') throw new SandboxPathNotFoundError(path);
        throw new SandboxError(500, done.error.code, done.error.message, { body: done });
      }
      entries = all;
    } catch (err) {
      if (isPathNotFound(err)) throw new SandboxPathNotFoundError(path);
      throw err;
    }
    const out: FileInfo[] = [];
    for (const e of entries) {
      if (e.path.includes('/')) continue; // deeper than the directory's own entries
      if (e.kind === 'symlink') {
        try {
          const target = await this.client.stat(id, `${dir}${e.name}/`);
          out.push({ name: e.name, isDir: target.kind === 'dir', size: target.size });
        } catch {
          out.push({ name: e.name });
        }
      } else {
        out.push({ name: e.name, isDir: e.kind === 'dir', size: e.size });
      }
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * `sandbox_file_editor` and `sandbox_shell`, bound to this sandbox: the
   * tools the SDK's Docker and SSH sandboxes vend, under the same names.
   */
  override getTools(): Tool[] {
    if (this.options.tools === false) return [];
    const where = this.info
      ? `session ${this.info.id} of the sandbox node (working directory: ${this.info.working_directory})`
      : 'a session of the sandbox node';
    return [
      makeFileEditor(this, {
        name: 'sandbox_file_editor',
        description: `${DEFAULT_FILE_EDITOR_DESCRIPTION} Files are in ${where}.`,
      }),
      makeShell(this, {
        name: 'sandbox_shell',
        description: `${SANDBOX_SHELL_DESCRIPTION} Runs in ${where}.`,
      }),
    ] as Tool[];
  }

  // ---- plumbing ----

  /** The session id and `path` made absolute against its working directory, resolved lexically. */
  private async locate(path: string): Promise<{ id: string; abs: string }> {
    const info = await this.start();
    return { id: info.id, abs: resolvePath(joinPath(info.working_directory, path)) };
  }

  private async *run(
    start: (id: string, options: ExecOptions) => AsyncIterable<ExecStreamEvent>,
    options: ExecuteOptions | undefined,
  ): AsyncGenerator<StreamChunk | ExecutionResult, void, undefined> {
    const signal = options?.signal;
    if (signal?.aborted) throw new SandboxAbortError();
    const opts: ExecOptions = {};
    if (options?.cwd !== undefined) opts.cwd = options.cwd;
    if (options?.env !== undefined) opts.env = options.env;
    if (options?.timeout !== undefined) opts.timeout = options.timeout;
    if (signal) opts.signal = signal;
    let stdout = '';
    let stderr = '';
    try {
      const info = await this.start();
      for await (const event of start(info.id, opts)) {
        if (event.type === 'chunk') {
          if (event.stream === 'stderr') stderr += event.data;
          else stdout += event.data;
          const chunk: StreamChunk = { type: 'streamChunk', data: event.data, streamType: event.stream === 'stderr' ? 'stderr' : 'stdout' };
          yield chunk;
        } else {
          if (event.exit_reason === 'timeout') {
            throw new SandboxTimeoutError(options?.timeout ?? 0, stdout, stderr);
          }
          const result: ExecutionResult = {
            type: 'executionResult',
            exitCode: event.exit_code,
            stdout,
            stderr,
            outputFiles: [],
          };
          yield result;
          return;
        }
      }
    } catch (err) {
      if (signal?.aborted && !(err instanceof SandboxTimeoutError)) throw new SandboxAbortError();
      throw err;
    }
  }
}

export { SandboxClient, SandboxError };

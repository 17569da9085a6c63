/**
 * The objects of the sandbox node's HTTP JSON API, as the node sends them.
 *
 * Field names are the wire names (snake_case). Bytes travel in JSON as text
 * when they are valid UTF-8 (`data`, `stdout`, `stderr`, `path`) and as
 * base64 in a `<field>_b64` field when they are not. The client fills the
 * text field in either case (decoded with U+FFFD for bytes that are not
 * UTF-8) and keeps the `_b64` field, so `bytesOf(obj, "stdout")` gives the
 * exact bytes.
 */

/** A map of environment variables, `NAME` to value. */
export type Env = Record<string, string>;

/** How a session is isolated from the host. */
export type Isolation = 'none' | 'contained' | (string & {});

/** Why an execution or process ended. */
export type ExitReason = 'exited' | 'signalled' | 'timeout' | 'cancelled' | 'stopped' | (string & {});

/** `POST /v1/sessions`, `GET /v1/sessions/{id}`. */
export interface SessionInfo {
  type: 'session';
  id: string;
  working_directory: string;
  home_directory: string;
  port: number;
  /** `127.0.0.1:PORT`, or `""` when the session has no endpoint. */
  endpoint: string;
  children: number;
  isolation: Isolation;
}

/** `DELETE /v1/sessions/{id}`. */
export interface StopReceipt {
  type: 'stopped';
  id: string;
  ended: number;
  killed: number;
  survivors: number;
}

/** What a contained execution was refused or hit (docs/security.md). */
export interface Violation {
  kind: string;
  execution?: number;
  detail?: string;
  [field: string]: unknown;
}

/** The fields every execution result has, streamed or not. */
export interface ExecOutcome {
  type: 'result';
  exit_code: number;
  exit_reason: ExitReason;
  truncated: boolean;
  dropped_bytes: number;
  ended_by: string | null;
  violations: Violation[];
  violations_dropped: number;
}

/** `POST …/exec` and `POST …/code` answered as JSON. */
export interface ExecResult extends ExecOutcome {
  stdout: string;
  stderr: string;
  /** Present when stdout is not valid UTF-8: the exact bytes, base64. */
  stdout_b64?: string;
  /** Present when stderr is not valid UTF-8: the exact bytes, base64. */
  stderr_b64?: string;
}

/** One `chunk` line of a streamed execution. */
export interface ExecChunk {
  type: 'chunk';
  stream: 'stdout' | 'stderr';
  data: string;
  data_b64?: string;
}

/** The last line of a streamed execution: the result without stdout/stderr. */
export type ExecStreamResult = ExecOutcome;

/** What `execStream` and `codeStream` yield. */
export type ExecStreamEvent = ExecChunk | ExecStreamResult;

/** A process started by `POST …/processes`. */
export interface ProcessInfo {
  type: 'process';
  id: string;
  session: string;
  command: string;
  pid: number;
  state: 'running' | 'exited' | (string & {});
  tty: boolean;
  stdin_open: boolean;
  next_offset: number;
  retained_from: number;
  exit_code?: number;
  exit_reason?: ExitReason;
}

/** One chunk of a process's output log. */
export interface OutputChunk {
  stream: 'stdout' | 'stderr' | 'pty';
  offset: number;
  data: string;
  data_b64?: string;
}

/** `GET …/processes/{pid}/output`. */
export interface ProcessOutput {
  type: 'output';
  offset: number;
  next_offset: number;
  /** Bytes between the asked offset and the first retained byte. */
  gap: number;
  running: boolean;
  exit_code?: number;
  exit_reason?: ExitReason;
  chunks: OutputChunk[];
}

/** `{"type":"ok"}` */
export interface Ok {
  type: 'ok';
}

/** `GET …/files/{path}` */
export interface FileContent {
  data: Uint8Array;
  /** The file's version, from the `ETag` header (quotes removed). */
  version: string | undefined;
}

/** `GET …/files/{path}` decoded as UTF-8. */
export interface TextContent {
  text: string;
  version: string | undefined;
}

/** `PUT …/files/{path}` */
export interface WriteResult {
  type: 'written';
  path: string;
  path_b64?: string;
  bytes: number;
  version: string;
}

/** `DELETE …/files/{path}` */
export interface RemoveResult {
  type: 'removed';
  path: string;
  path_b64?: string;
}

export type FileKind = 'file' | 'dir' | 'symlink' | 'other' | (string & {});

/** One `entry` line of `GET …/list/{path}`. */
export interface ListEntry {
  type: 'entry';
  /** Relative to the listed directory, `/`-separated. */
  path: string;
  path_b64?: string;
  name: string;
  name_b64?: string;
  kind: FileKind;
  size: number;
}

/** The last line of `GET …/list/{path}`. */
export interface ListDone {
  type: 'done';
  count: number;
  /** Why the listing stopped early, or null when it is complete. */
  error: { code: string; message: string } | null;
}

/** `GET …/stat/{path}` */
export interface StatInfo {
  type: 'stat';
  path: string;
  path_b64?: string;
  kind: FileKind;
  size: number;
  /**
   * Nanoseconds since the epoch. A JSON number: above 2^53, so it arrives
   * rounded (to about 256 ns).
   */
  mtime_ns: number;
  dev: number;
  ino: number;
  version: string;
}

/** An error body: `{"type":"error","code":"…","message":"…"}`. */
export interface ErrorBody {
  type: 'error';
  code: string;
  message: string;
}

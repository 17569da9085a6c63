/**
 * `@sandbox/client`: a dependency-free client of a sandbox node's HTTP JSON
 * API. The Strands Agents `Sandbox` lives in `@sandbox/client/strands`.
 */
export { SandboxClient } from './client.js';
export type {
  CallOptions,
  CreateSessionOptions,
  ExecOptions,
  FetchLike,
  FileBody,
  ListOptions,
  ReadFileOptions,
  ReadOutputOptions,
  SandboxClientOptions,
  StartProcessOptions,
  WriteFileOptions,
  WriteStdinOptions,
} from './client.js';
export { SandboxError, STATUS_OF_CODE } from './errors.js';
export { base64ToBytes, bytesOf } from './bytes.js';
export { encodePath, resolvePath } from './paths.js';
export type * from './types.js';

/**
 * Reading `application/x-ndjson` answers: one JSON value per line.
 */
import { SandboxError } from './errors.js';

/**
 * Yields each line of the answer's body parsed as JSON, as the lines
 * arrive. Leaving the loop early cancels the body (which closes the
 * request). An aborted `signal` rejects the pending read.
 */
export async function* readNdjson(res: Response, signal?: AbortSignal): AsyncGenerator<unknown, void, undefined> {
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let finished = false;
  const parse = (line: string): unknown => {
    try {
      return JSON.parse(line);
    } catch (err) {
      throw new SandboxError(res.status, 'bad_response', `a line of the stream is not JSON: ${line.slice(0, 200)}`, {
        cause: err,
      });
    }
  };
  try {
    for (;;) {
      signal?.throwIfAborted();
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line) yield parse(line);
      }
    }
    finished = true;
    buffer += decoder.decode();
    const rest = buffer.trim();
    if (rest) yield parse(rest);
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/**
 * Session paths in URLs: `/v1/sessions/{id}/files/{path}` (and `list/`,
 * `stat/`). Each segment is percent-encoded, `/` separates them.
 *
 * A URL cannot carry `.` or `..` segments: fetch (like every WHATWG URL
 * parser) removes them, `%2e` spellings included, before the request leaves.
 * So the client resolves them itself, lexically, which is what the node
 * does with every path (docs/semantics.md §27: `.` and repeated slashes are
 * dropped, `..` removes the component before it, staying at `/` at the
 * root). A path that ends in `/`, `/.` or `/..` keeps a trailing slash (it
 * names a directory). The one thing that cannot be resolved without the
 * session's working directory is a relative path that climbs above it
 * (`../x`): that is refused here, with `invalid_argument`.
 */
import { SandboxError } from './errors.js';

/** Lexically resolved form of `path`: see the module comment. */
export function resolvePath(path: string): string {
  const absolute = path.startsWith('/');
  const names = path.split('/');
  const last = names[names.length - 1];
  const namesDirectory = names.length > 1 && (last === '' || last === '.' || last === '..');
  const stack: string[] = [];
  for (const name of names) {
    if (name === '' || name === '.') continue;
    if (name === '..') {
      if (stack.length > 0) stack.pop();
      else if (!absolute) {
        throw new SandboxError(
          0,
          'invalid_argument',
          `path climbs above the working directory and cannot be sent in a URL: ${JSON.stringify(path)}; ` +
            'make it absolute first',
        );
      }
      continue;
    }
    stack.push(name);
  }
  let out = (absolute ? '/' : '') + stack.join('/');
  if (namesDirectory && stack.length > 0) out += '/';
  return out;
}

/** `path` resolved (see `resolvePath`) and percent-encoded segment by segment. */
export function encodePath(path: string): string {
  const resolved = resolvePath(path);
  return resolved
    .split('/')
    .map((name) => encodeURIComponent(name))
    .join('/');
}

/** POSIX join of a directory and a path: `path` itself when absolute. */
export function joinPath(dir: string, path: string): string {
  if (path.startsWith('/')) return path;
  if (path === '' || path === '.') return dir;
  return dir.endsWith('/') ? dir + path : `${dir}/${path}`;
}

/**
 * Bytes in JSON: `field` holds valid UTF-8, `field_b64` the base64 of bytes
 * that are not. Web globals only (atob, TextEncoder, TextDecoder).
 */

const lossy = new TextDecoder('utf-8', { fatal: false });
const encoder = new TextEncoder();

export function base64ToBytes(b64: string): Uint8Array {
  const binary = atob(b64);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

export function bytesToText(bytes: Uint8Array): string {
  return lossy.decode(bytes);
}

export function toBytes(body: string | Uint8Array): Uint8Array {
  return typeof body === 'string' ? encoder.encode(body) : body;
}

/**
 * The exact bytes of a text field of an API object: from `field_b64` when
 * the node sent it, else the UTF-8 of `field`.
 *
 * @example bytesOf(result, 'stdout'); bytesOf(chunk, 'data'); bytesOf(entry, 'path')
 */
export function bytesOf(obj: object, field: string): Uint8Array {
  const rec = obj as Record<string, unknown>;
  const b64 = rec[`${field}_b64`];
  if (typeof b64 === 'string') return base64ToBytes(b64);
  const text = rec[field];
  return encoder.encode(typeof text === 'string' ? text : '');
}

/**
 * Fills `field` from `field_b64` (decoded, U+FFFD for what is not UTF-8)
 * wherever the node sent only the base64 form, so that the text field is
 * always there. Works in place on the object and on the objects of its
 * `chunks` array. Returns the object.
 */
export function fillText<T>(obj: T): T {
  if (obj === null || typeof obj !== 'object') return obj;
  const rec = obj as Record<string, unknown>;
  for (const key of Object.keys(rec)) {
    if (!key.endsWith('_b64')) continue;
    const field = key.slice(0, -4);
    const b64 = rec[key];
    if (typeof b64 === 'string' && typeof rec[field] !== 'string') {
      rec[field] = bytesToText(base64ToBytes(b64));
    }
  }
  const chunks = rec['chunks'];
  if (Array.isArray(chunks)) for (const c of chunks) fillText(c);
  return obj;
}

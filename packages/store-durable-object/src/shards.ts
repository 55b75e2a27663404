/**
 * The rule that places a key on an object: with `shards` objects, a key goes to the object whose
 * number is the FNV-1a hash (32 bits, of the UTF-16 units) of its **hash tag** modulo `shards`,
 * named `${name}:${number}`. The hash tag is Redis Cluster's: the text between the first `{` and
 * the first `}` after it, when not empty; else the whole key. One object (`shards: 1`, the default)
 * is one thread for every key; more spread the keys, and keys that share a hash tag (a client's
 * limits: `{203.0.113.7}`) share an object, so a request's limits on them are decided in one
 * subrequest, together.
 */
export function shardOf(key: string, shards: number): number {
  if (shards === 1) return 0;
  return fnv1a(hashTag(key)) % shards;
}

/** The part of `key` that places it: the text inside its first `{…}` when not empty, else the key. */
export function hashTag(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  return close === -1 || close === open + 1 ? key : key.slice(open + 1, close);
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

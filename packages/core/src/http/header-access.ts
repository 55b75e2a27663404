// How the header writer reads and writes one framework's response headers (a Node response, a Fetch one).

/** Reads and writes response headers of one framework without allocating per request. */
export interface HeaderAccess<T> {
  get(target: T, name: string): unknown;
  set(target: T, name: string, value: string): void;
  /**
   * Optional. Marks `target` as carrying rl headers, and returns true when it was not marked yet:
   * no other rl middleware has written its RateLimit headers on this response, so the writer sets
   * them without reading them back first. Without it, every header is read back before it is set.
   * {@link claimResponse} implements it with a symbol on the response object (fast on objects
   * whose prototype was never replaced, such as Koa's contexts).
   */
  claim?(target: T): boolean;
}

/** Marks a response written by an rl header writer (a symbol property: one per response, no allocation). */
const WRITTEN: unique symbol = Symbol('rl.headers');

/** A {@link HeaderAccess.claim} for any response object: true on the first call for `target`, false afterwards. */
export function claimResponse(target: object): boolean {
  const marked = target as { [WRITTEN]?: true };
  if (marked[WRITTEN] === true) return false;
  marked[WRITTEN] = true;
  return true;
}

/** The header methods of a Node `ServerResponse` (Express, Koa's `ctx.res`). */
export interface NodeHeaderTarget {
  getHeader(name: string): unknown;
  setHeader(name: string, value: string): unknown;
  hasHeader(name: string): boolean;
}

/**
 * {@link HeaderAccess} for a Node `ServerResponse`. Its claim is one header lookup: every rl writer
 * with headers sets `RateLimit-Policy`, so without it no other one has written on the response.
 * (Not a property on the response: Express responses have a replaced prototype, and adding a
 * property to such an object is slow.)
 */
export const nodeHeaderAccess: HeaderAccess<NodeHeaderTarget> = {
  get: (res, name) => res.getHeader(name),
  set: (res, name, value) => {
    res.setHeader(name, value);
  },
  claim: (res) => !res.hasHeader('ratelimit-policy'),
};

/**
 * {@link HeaderAccess} for the `Headers` of a Fetch `Response`. No claim: a Fetch adapter writes on
 * the response the rest of its chain returned (`HeaderWriter.writeBeneath`), which reads whether an
 * inner rl writer wrote on it.
 */
export const fetchHeaderAccess: HeaderAccess<Headers> = {
  get: (headers, name) => headers.get(name) ?? undefined,
  set: (headers, name, value) => headers.set(name, value),
};

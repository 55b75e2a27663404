// Where one rl header writer's headers go among those other rl writers put on the same response: set
// as the first, appended after earlier ones (a Node response, written in the order the middlewares
// run), or beneath inner ones (a Fetch response, written as the answers come back). For `HeaderWriter`
// (headers.ts), which decides the values.
import type { HeaderAccess } from './header-access.js';

/** How a writer puts its headers among those of the other rl writers on one response. */
export interface Placement {
  /** Puts list members (draft-8's, the policies) on header `name`. */
  member<T>(access: HeaderAccess<T>, target: T, name: string, value: string): void;
  /** Whether an admitted writer's single-limit value (`remaining` left) replaces the one in header `name`. */
  replaces<T>(access: HeaderAccess<T>, target: T, name: string, remaining: number): boolean;
}

/** The first rl writer on the response: its headers are set, nothing read back. */
export const FIRST: Placement = {
  member: (access, target, name, value) => access.set(target, name, value),
  replaces: () => true,
};

/** After the rl writers that ran earlier: list members appended, and the single-limit value of the most restrictive (fewer remaining) shows. */
export const AFTER: Placement = {
  member: (access, target, name, value) => {
    const existing = listIn(access, target, name);
    access.set(target, name, existing === undefined ? value : `${existing}, ${value}`);
  },
  replaces: (access, target, name, remaining) => {
    const existing = access.get(target, name);
    return existing === undefined || !(remainingIn(existing, name) <= remaining);
  },
};

/**
 * Beneath the rl writers that ran inside this one and wrote first (see `HeaderWriter.writeBeneath`):
 * list members prepended, and the single-limit value replaced unless the inner one denied (a
 * `Retry-After` on the response) or shows fewer remaining. The outcome of {@link AFTER} with the
 * inner writer written after this one.
 */
export const BENEATH: Placement = {
  member: (access, target, name, value) => {
    const existing = listIn(access, target, name);
    access.set(target, name, existing === undefined ? value : `${value}, ${existing}`);
  },
  replaces: (access, target, name, remaining) => {
    if (!isEmpty(access.get(target, 'Retry-After'))) return false;
    const existing = access.get(target, name);
    return isEmpty(existing) || !(remainingIn(existing, name) < remaining);
  },
};

/** True for a header that is not there (`undefined`, or `null` from a Fetch `Headers`) or empty. */
export function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

/** The list another writer set in header `name` (repeated values joined), or undefined. */
function listIn<T>(access: HeaderAccess<T>, target: T, name: string): string | undefined {
  const existing = access.get(target, name);
  if (isEmpty(existing)) return undefined;
  return Array.isArray(existing) ? existing.join(', ') : String(existing);
}

const REMAINING_IN_DRAFT7 = /remaining=(\d+)/;

/** The remaining of a single-limit value in header `name`: draft-7's `remaining=` item of `RateLimit`, or the whole value (NaN when it is none). */
function remainingIn(existing: unknown, name: string): number {
  const text = String(existing);
  return name === 'RateLimit' ? Number(REMAINING_IN_DRAFT7.exec(text)?.[1]) : Number(text);
}

import type { SuiteContext } from './context.js';

/**
 * Requests told apart by their `x-user` header: `user`, the key function (`'anonymous'` without the
 * header), and `as(name)`, the request options of that user.
 */
export function usersByHeader(t: SuiteContext): {
  user: (req: unknown) => string;
  as: (name: string) => { headers: Record<string, string> };
} {
  return {
    user: (req) => t.adapter.view(req).header('x-user') ?? 'anonymous',
    as: (name) => ({ headers: { 'x-user': name } }),
  };
}

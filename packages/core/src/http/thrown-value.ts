/**
 * What an adapter hands to the framework's error path (Express's `next(error)`, Fastify's
 * `done(error)`) for a value that a user function (`key`, `cost`, `skip`, a per-request `algorithm`,
 * `onLimit`) threw or rejected with: the value itself, unless the framework would read it as "no
 * error" or as a routing signal, and so let the request through without a limit. Those are the falsy
 * values (`undefined`, `null`, `false`, `0`, `''`, `NaN`, `0n`) and Express's `'route'` and `'router'`
 * strings; each becomes an `Error` saying what was thrown, the value as its `cause`. Everything else
 * (an `Error`, an object with a `status`, a message string) goes through unchanged, as the framework
 * would receive it from any other middleware.
 */
export function forwardableError(thrown: unknown): unknown {
  if (thrown && thrown !== 'route' && thrown !== 'router') return thrown;
  return new Error(
    `A function of the rate limit (key, cost, skip, algorithm or onLimit) threw or rejected with ${describe(thrown)} instead of an Error`,
    { cause: thrown },
  );
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  return String(value);
}

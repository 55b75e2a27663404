/**
 * Follows `promise` without awaiting it, for a test that moves a fake clock towards its deadline: the
 * function returned answers `'pending'` until the promise settles, then the value it resolved to or
 * the error it rejected with.
 */
export function outcomeOf(promise: Promise<unknown>): () => unknown {
  let outcome: unknown = 'pending';
  void promise.then(
    (value) => (outcome = value),
    (error: unknown) => (outcome = error),
  );
  return () => outcome;
}

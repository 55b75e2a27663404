// The console log of a check script (pack-test, doc-test): steps with the seconds since start, ok and
// FAIL lines, and the failures collected for the summary and the exit code.

/** A fresh log: `failures` fills as `fail` is called; `seconds()` since the log was made. */
export function checkLog() {
  const started = Date.now();
  const failures = [];
  const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
  return {
    failures,
    seconds,
    fail(message) {
      failures.push(message);
      console.log(`  FAIL ${message}`);
    },
    ok: (message) => console.log(`  ok   ${message}`),
    step: (message) => console.log(`\n== ${message} (${seconds()}s)`),
  };
}

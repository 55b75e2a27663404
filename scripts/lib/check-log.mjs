// The console log of a check script (pack-test, doc-test): steps with the seconds since start, ok,
// note and FAIL lines, and the failures collected for the summary and the exit code.
//
// Quiet (`{ quiet: true }`, pack-test unless --verbose): a passing run prints nothing of its steps,
// only the script's summary line. The steps, ok and note lines are kept, and printed, all of them up
// to the first failure, when a check fails (then the log goes on as it happens): a failure is read in
// its context, a pass is one line.

/**
 * A fresh log: `failures` fills as `fail` is called; `seconds()` since the log was made. `write`
 * prints a line (default: console.log).
 */
export function checkLog({ quiet = false, write = (line) => console.log(line) } = {}) {
  const started = Date.now();
  const failures = [];
  const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
  const held = quiet ? [] : undefined;
  const print = (line) => {
    if (held && failures.length === 0) held.push(line);
    else write(line);
  };
  return {
    failures,
    seconds,
    fail(message) {
      if (held && failures.length === 0) for (const line of held.splice(0)) write(line);
      failures.push(message);
      write(`  FAIL ${message}`);
    },
    ok: (message) => print(`  ok   ${message}`),
    /** Something worth knowing that is no failure (a package without a README, errors ignored in third-party typings). */
    note: (message) => print(`  note ${message}`),
    step: (message) => print(`\n== ${message} (${seconds()}s)`),
  };
}

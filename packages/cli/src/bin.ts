#!/usr/bin/env node
import { main } from './cli.js';

// A reader that stops early (`rl simulate --json | head`) closes the pipe: the rest of the output is
// not wanted, which is no failure. Any other write error (a full disk) is told in one line.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
  process.stderr.write(`rl: the output could not be written (${error.code ?? error.message})\n`);
  process.exit(1);
});

main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stderrIsTTY: process.stderr.isTTY === true,
}).then((code) => {
  process.exitCode = code;
});

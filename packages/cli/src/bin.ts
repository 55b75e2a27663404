#!/usr/bin/env node
import { main } from './cli.js';

main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stderrIsTTY: process.stderr.isTTY === true,
}).then((code) => {
  process.exitCode = code;
});

#!/usr/bin/env node
// The production files over a size worth a review, counted as Prettier formats them (the repository's
// .prettierrc.json, in memory: nothing is written), so that a file's size says how much code it holds,
// not how tightly it was laid out. Not a check: it always exits 0 (DESIGN-NOTES lists each file it
// names, with why it is that long; see docs/design/testing.md, "Structure tests").
//
//   node scripts/formatted-sizes.mjs            files over 400 formatted lines
//   node scripts/formatted-sizes.mjs --over 300 another threshold (0: every production file)
//
// Each line: formatted lines, the lines as written, the path under packages/.
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { productionFiles } from './lib/production-files.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const packagesDir = join(root, 'packages');

const at = process.argv.indexOf('--over');
const over = at === -1 ? 400 : Number(process.argv[at + 1]);
if (!Number.isInteger(over) || over < 0) {
  console.error('usage: node scripts/formatted-sizes.mjs [--over LINES]');
  process.exit(2);
}

/** Lines of a text: its newlines (a file ends with one), as `wc -l` counts them. */
const lines = (text) => text.split('\n').length - 1;

const sizes = [];
for (const file of productionFiles(packagesDir)) {
  const text = readFileSync(file, 'utf8');
  const options = await prettier.resolveConfig(file);
  const formatted = await prettier.format(text, { ...options, filepath: file });
  sizes.push({ file: relative(packagesDir, file), formatted: lines(formatted), written: lines(text) });
}
const listed = sizes.filter((size) => size.formatted > over).sort((a, b) => b.formatted - a.formatted);
console.log(
  `${listed.length} of ${sizes.length} production files over ${over} formatted lines (formatted, as written, file):`,
);
for (const { file, formatted, written } of listed) {
  console.log(`${String(formatted).padStart(5)} ${String(written).padStart(5)}  ${file}`);
}

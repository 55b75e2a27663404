#!/usr/bin/env node
// Generates src/lua-scripts.generated.ts from src/lua/*.lua, so that the published package carries
// the scripts as strings (no file reads at runtime, works from ESM and CJS builds alike). Each script
// is src/lua/prelude.lua (what every script shares) followed by the script's own file; the store puts
// each configuration's constants before it, as literals or read from ARGV (see prelude.lua). A line `--#include <file>.lua` in a script
// is replaced by that file's text: a block of statements the scripts share without making a function of
// it (see compact-write.lua).
//
// A script marked `--#blockable` (a rate algorithm's) also gets its blocking variant, `<name>-block`, run
// for an algorithm with a lockout (`withBlock` in @rl/core): the same text with the block read in place of
// the mark `--#block-read` (block-read-compact.lua or block-read-keys.lua, then block-read.lua; the mark is
// in prelude-compact.lua, or in a script with keys of its own, and must come before the remembered ids
// are read, so that a ban or a lockout outranks a replay; a script without a blocking variant drops it) and its final reply,
// `return struct.pack('<dddddd', <five values>, now)`, taken into block-reply.lua, which writes a block
// that a denial starts (block-write-compact.lua or block-write-keys.lua). One source per algorithm; the
// variants are never written by hand.
//
// Everything the module says of a script is read from its text: a script of the compact layout is one
// that includes compact-write.lua (and gets prelude-compact.lua), its number of keys is the highest
// KEYS[n] it reads, its constants are the upper-case names it reads and never declares. The algorithm's
// own description (`script` on each algorithm of @rl/core) says the same, and the store checks that
// they agree before it runs a script.
//
//   node scripts/generate-lua.mjs          writes the module
//   node scripts/generate-lua.mjs --check  exits 1 when the module is stale (CI; also a vitest test)
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const luaDir = join(packageDir, 'src', 'lua');
/** Put before every script: the definitions the scripts share. Not a script of its own. */
const PRELUDE = 'prelude.lua';
/** Put after PRELUDE before the scripts of the compact layout. Not a script of its own. */
const COMPACT_PRELUDE = 'prelude-compact.lua';
/** Blocks that scripts include (`--#include <file>`). Not scripts of their own. */
const INCLUDED = [
  'compact-write.lua',
  'window-undo.lua',
  'window-count.lua',
  'idem-read.lua',
  'idem-write-compact.lua',
  'idem-write-keys.lua',
];
/** The reply of every rate script (`--#blockable`): an idempotent charge's (see idem-reply.lua), after the lockout's. Not a script of its own. */
const IDEM_REPLY = 'idem-reply.lua';
/** Where idem-reply.lua counts a replay in its record, by layout (its mark `--#idem-count`). Not scripts of their own. */
const IDEM_COUNT = { compact: 'idem-count-compact.lua', keys: 'idem-count-keys.lua' };
/** The parts of the blocking variants (see above), by layout. Not scripts of their own. */
const BLOCK_PARTS = {
  read: { compact: 'block-read-compact.lua', keys: 'block-read-keys.lua' },
  check: 'block-read.lua',
  write: { compact: 'block-write-compact.lua', keys: 'block-write-keys.lua' },
  reply: 'block-reply.lua',
};
const BLOCK_FILES = [
  ...Object.values(BLOCK_PARTS.read),
  BLOCK_PARTS.check,
  ...Object.values(BLOCK_PARTS.write),
  BLOCK_PARTS.reply,
  IDEM_REPLY,
  ...Object.values(IDEM_COUNT),
];
/** The marker of a script that gets a blocking variant, alone on its line. */
const BLOCKABLE = /^--#blockable[ \t]*$/m;
/** A script's final reply: five values and `now` (group 1: the five values). */
const FINAL_REPLY = /^return struct\.pack\('<dddddd', (.+), now\)[ \t]*\n?$/m;
/** The block that writes a state of the compact layout: the scripts that include it are that layout's. */
const COMPACT_WRITE = 'compact-write.lua';
/**
 * Names the store declares before every script, whatever its algorithm (see RedisStore and
 * prelude.lua): not constants of an algorithm's configuration.
 */
const STORE_CONSTANTS = [
  ...[
    'OP',
    'IDEMPOTENT',
    'BATCH_TIME',
    'UNDO_AT',
    'UNDO_DELAY',
    'EXPLICIT_NOW_MARGIN_MS',
    'HORIZON',
    'STATE_BYTES',
    'IDEM_KEY',
  ],
  ...[
    'ARG_OWN',
    'ARG_NOW',
    'ARG_MAX_DELAY',
    'ARG_CHARGED_AT',
    'ARG_DELAY',
    'ARG_ACTUAL',
    'ARG_MAX_DEBT',
    'ARG_IDEM',
    'ARG_FINGERPRINT',
    'ARG_IDEM_TTL',
    'ARG_IDEM_MAX',
  ],
  'ARG_IDEM_REPLAYS',
];
export const generatedPath = join(packageDir, 'src', 'lua-scripts.generated.ts');

/**
 * The place of a key's override read, alone on its line (in prelude-compact.lua): shipped as the line
 * OVERRIDE_PLACE, which the store replaces with the read for an algorithm that checks overrides
 * (`overrideRead` in src/script-plan.ts) and leaves, a comment, otherwise.
 */
const OVERRIDE_MARK = /^[ \t]*--#override[ \t]*$/m;
export const OVERRIDE_PLACE = '--@override';

/**
 * The Lua text as shipped: without its comment lines and blank lines. Redis keeps the text of every
 * script (one per configuration and operation), and the comments are most of it. The scripts have no
 * long strings or block comments (`[[`), so a line that starts with `--` is a comment line (but the
 * override's place, OVERRIDE_PLACE).
 */
function withoutComments(lua) {
  if (lua.includes('[[')) throw new Error('generate-lua: a script uses [[ ]]; withoutComments cannot strip it safely');
  return (
    lua
      .replace(OVERRIDE_MARK, OVERRIDE_PLACE)
      .split('\n')
      .filter((line) => line.trim() !== '' && (line === OVERRIDE_PLACE || !line.trimStart().startsWith('--')))
      .join('\n') + '\n'
  );
}

/** An include line: `--#include <file>` alone on its line (group 1: the file). */
const INCLUDE_LINE = /^[ \t]*--#include[ \t]+(\S+)[ \t]*$/gm;

/**
 * `lua` with each `--#include <file>` line replaced by the text of that file of INCLUDED, whose own
 * include lines are replaced in turn; each file included is added to `included`.
 */
function withIncludes(lua, included = []) {
  return lua.replace(INCLUDE_LINE, (_, file) => {
    if (!INCLUDED.includes(file))
      throw new Error(`generate-lua: --#include ${file}: not one of ${INCLUDED.join(', ')}`);
    if (included.filter((f) => f === file).length > 8)
      throw new Error(`generate-lua: --#include ${file}: included in itself`);
    included.push(file);
    return withIncludes(readFileSync(join(luaDir, file), 'utf8'), included);
  });
}

/** Lua code without its string literals (which may hold upper-case words such as 'LIMIT'). */
function withoutStrings(lua) {
  return lua.replace(/'[^'\n]*'|"[^"\n]*"/g, "''");
}

/** The number of keys a script reads: the highest n of its KEYS[n], which must run from 1 without a gap. */
function numberOfKeysOf(name, lua) {
  const used = new Set([...withoutStrings(lua).matchAll(/\bKEYS\[(\d+)\]/g)].map((m) => Number(m[1])));
  const count = used.size === 0 ? 0 : Math.max(...used);
  for (let n = 1; n <= count; n++)
    if (!used.has(n)) throw new Error(`generate-lua: ${name}.lua reads KEYS[${count}] but not KEYS[${n}]`);
  return count;
}

/** The constants of its configuration a script reads: upper-case names it never declares, but the store's own. */
function constantsOf(lua) {
  const code = withoutStrings(lua);
  const declared = new Set(['KEYS', 'ARGV', ...STORE_CONSTANTS]);
  for (const m of code.matchAll(/\blocal\s+(?:function\s+)?([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)/g)) {
    for (const name of m[1].split(',')) declared.add(name.trim());
  }
  const read = new Set(
    [...code.matchAll(/(?<![.\w])[A-Z][A-Z0-9_]*\b/g)].map((m) => m[0]).filter((n) => !declared.has(n)),
  );
  return [...read].sort();
}

/** The place of the block read, alone on its line (see above). */
const BLOCK_READ_MARK = /^[ \t]*--#block-read[ \t]*$/m;
/** Where a script reads the remembered ids of an idempotent charge. */
const IDEM_READ = /^[ \t]*--#include[ \t]+idem-read\.lua[ \t]*$/m;

/**
 * `lua` (the preludes and a rate script, its includes not yet in place) with its one block-read mark
 * replaced by `text` (the block read of a blocking variant, or nothing); `name` for errors. The mark
 * must come before the remembered ids are read: a ban or a lockout outranks a replay.
 */
function withBlockRead(name, lua, text) {
  const marks = lua.match(new RegExp(BLOCK_READ_MARK.source, 'gm')) ?? [];
  const mark = BLOCK_READ_MARK.exec(lua);
  const idem = IDEM_READ.exec(lua);
  if (marks.length !== 1 || mark === null || idem === null || idem.index < mark.index) {
    throw new Error(
      `generate-lua: ${name}.lua is --#blockable but its text (with prelude-compact.lua for the compact layout) has not one \`--#block-read\` line before \`--#include idem-read.lua\``,
    );
  }
  return lua.slice(0, mark.index) + text + lua.slice(mark.index + mark[0].length + 1);
}

/** The block read of a blocking variant, for its layout: the layout's read, then block-read.lua. */
function blockRead(compact) {
  return (
    readFileSync(join(luaDir, BLOCK_PARTS.read[compact ? 'compact' : 'keys']), 'utf8') +
    readFileSync(join(luaDir, BLOCK_PARTS.check), 'utf8')
  );
}

/**
 * The blocking variant of `source` (a script marked `--#blockable`, `name` for errors): the final reply
 * taken into block-reply.lua with the layout's block write (the block read is put in place by
 * {@link withBlockRead}).
 */
function blockingVariant(name, source, compact) {
  const replies = source.match(new RegExp(FINAL_REPLY.source, 'gm')) ?? [];
  const final = FINAL_REPLY.exec(source);
  if (replies.length !== 1 || final === null || source.slice(final.index + final[0].length).trim() !== '') {
    throw new Error(
      `generate-lua: ${name}.lua is --#blockable but does not end with its one reply \`return struct.pack('<dddddd', …, now)\``,
    );
  }
  const write = readFileSync(join(luaDir, BLOCK_PARTS.write[compact ? 'compact' : 'keys']), 'utf8');
  const reply = readFileSync(join(luaDir, BLOCK_PARTS.reply), 'utf8').replace(
    /^[ \t]*--#block-write[ \t]*$/m,
    () => write,
  );
  return (
    source.slice(0, final.index) + `local r_allowed, r_remaining, r_reset, r_retry, r_delay = ${final[1]}\n` + reply
  );
}

/**
 * `source` (a rate script, or its blocking variant) with its final reply taken into idem-reply.lua, the
 * reply of an idempotent charge, with the layout's write of the remembered ids and of a replay's count.
 */
function withIdempotentReply(name, source, compact) {
  const final = FINAL_REPLY.exec(source);
  if (final === null || source.slice(final.index + final[0].length).trim() !== '') {
    throw new Error(
      `generate-lua: ${name}.lua is --#blockable but does not end with its one reply \`return struct.pack('<dddddd', …, now)\``,
    );
  }
  const write = readFileSync(join(luaDir, compact ? 'idem-write-compact.lua' : 'idem-write-keys.lua'), 'utf8');
  const count = readFileSync(join(luaDir, IDEM_COUNT[compact ? 'compact' : 'keys']), 'utf8');
  const reply = readFileSync(join(luaDir, IDEM_REPLY), 'utf8')
    .replace(/^[ \t]*--#idem-write[ \t]*$/m, () => write)
    .replace(/^[ \t]*--#idem-count[ \t]*$/m, () => count);
  return (
    source.slice(0, final.index) + `local i_allowed, i_remaining, i_reset, i_retry, i_delay = ${final[1]}\n` + reply
  );
}

/** The text of the generated module for the .lua files as they are now. */
export function renderModule() {
  const files = readdirSync(luaDir)
    .filter(
      (f) =>
        f.endsWith('.lua') &&
        f !== PRELUDE &&
        f !== COMPACT_PRELUDE &&
        !INCLUDED.includes(f) &&
        !BLOCK_FILES.includes(f),
    )
    .sort();
  const prelude = readFileSync(join(luaDir, PRELUDE), 'utf8');
  const compactPrelude = readFileSync(join(luaDir, COMPACT_PRELUDE), 'utf8');
  /** Each script by name, and its blocking variant after it: [name, source, blocking]. */
  const scripts = files.flatMap((f) => {
    const name = f.slice(0, -4);
    const source = readFileSync(join(luaDir, f), 'utf8');
    return BLOCKABLE.test(source)
      ? [
          [name, source, false],
          [`${name}-block`, source, true],
        ]
      : [[name, source, false]];
  });
  const names = scripts.map(([n]) => n);
  let out = `// Generated by scripts/generate-lua.mjs from src/lua/*.lua. Do not edit: edit the .lua file and run\n`;
  out += `// \`pnpm --filter @rl/store-redis generate\` (a test fails while this module is stale).\n\n`;
  out += `/**\n * A Lua script of the Redis store, as read from its text: its source (without the configuration and the\n * argument positions the store puts before it, see src/wire.ts), its number of keys, whether it keeps\n * states in the compact layout (bucket hashes, a field per key), and the constants of a configuration\n * it reads (sorted).\n */\n`;
  out += `export interface LuaScript {\n  readonly name: string;\n  readonly lua: string;\n  readonly numberOfKeys: number;\n  readonly compact: boolean;\n  readonly constants: readonly string[];\n}\n\n`;
  out += `/** The store's scripts by name (an algorithm's \`script.name\`). */\n`;
  out += `export const luaScripts: Readonly<Record<${names.map((n) => `'${n}'`).join(' | ')}, LuaScript>> = {\n`;
  for (const [name, source, blocking] of scripts) {
    if (/^[ \t]*--[ \t]*#[ \t]*include/m.test(source.replace(INCLUDE_LINE, ''))) {
      throw new Error(
        `generate-lua: ${name}.lua has a malformed include line (write \`--#include <file>.lua\` alone on its line)`,
      );
    }
    // Where each argument is, the store declares before the script (src/wire.ts), as it declares OP.
    const included = [];
    withIncludes(source, included);
    // A compact script writes its state only through the included block, once (directly or in a block it includes).
    const writes = included.filter((file) => file === COMPACT_WRITE).length;
    if (writes > 1)
      throw new Error(`generate-lua: ${name}.lua includes ${COMPACT_WRITE} ${writes} times (at most once)`);
    const compact = writes === 1;
    const rate = BLOCKABLE.test(source);
    // The script after its layout's prelude, with a blocking variant's block read in place of its mark.
    const text = (compact ? compactPrelude : '') + source;
    const own = withIncludes(rate ? withBlockRead(name, text, blocking ? blockRead(compact) : '') : text);
    const body = blocking ? blockingVariant(name, own, compact) : own;
    const lua = withoutComments(withIncludes(prelude) + (rate ? withIdempotentReply(name, body, compact) : body));
    const keys = numberOfKeysOf(name, lua);
    const constants = constantsOf(lua);
    // One line per script: the module is data, read by the store, not by people.
    out += `  '${name}': { name: '${name}', numberOfKeys: ${keys}, compact: ${compact}, constants: ${JSON.stringify(constants)}, lua: ${JSON.stringify(lua)} },\n`;
  }
  out += `};\n`;
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = renderModule();
  if (process.argv.includes('--check')) {
    const current = existsSync(generatedPath) ? readFileSync(generatedPath, 'utf8') : '';
    if (current !== text) {
      console.error(`${generatedPath} is stale: run pnpm --filter @rl/store-redis generate`);
      process.exit(1);
    }
  } else {
    writeFileSync(generatedPath, text);
  }
}

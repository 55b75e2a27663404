#!/usr/bin/env node
// The doc test: every TypeScript block of the READMEs (root, packages/*, examples/*) and of docs/*.md is a
// complete program, type-checked and run, unless the line before its fence is `<!-- fragment -->`.
//
//   1. Extract the blocks (```ts, ```typescript, ```js, ```mjs). A block of another language (sh,
//      json, promql, text) is never run. Each package README (but private ones) must open with its
//      install line: a ```sh block whose first command is `npm install <its name> …`.
//   2. Write each program to a scratch project outside the repo and type-check them all with tsc
//      (strict, NodeNext). In-repo (the default) the project's node_modules links to the workspace
//      packages (their builds: run `pnpm build` first) and to the frameworks the workspace installed.
//      With `--from-tarballs [dir]` the packages are packed (`pnpm pack` in each publishable package,
//      or the .tgz files already in dir are used) and installed with npm into a fresh project, with express,
//      fastify, koa, ioredis, redis, @valkey/valkey-glide, prom-client, @opentelemetry/api, their @types and typescript, at
//      the ranges the workspace tests with: the snippets then run as a user's code would.
//   3. Run each program with node (the tsc output), at most 2 at a time; each must exit 0 by itself
//      within 15 s, and print what its comments say: `console.log(x); // 200 "20-in-2s";r=15;t=1`
//      must print a line starting with that text (up to ` (`, an explanation, or `…`, anything). A program that mentions REDIS_URL gets one: a redis-server this script starts on
//      a free port (snippets read `process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'`).
//   4. Run each program again as the root README tells a CommonJS project to ("Running the programs"):
//      in a fresh project made by `npm init -y` (no `"type": "module"`), saved as `<name>.mts`, run
//      with tsx (`node --import tsx`), with the same checks; the Redis is flushed before, so a program
//      finds it as fresh as the first time. A `.ts` file there is CommonJS, where top-level `await`
//      is a syntax error: the programs are ES modules, and this checks that the README's way to run
//      them in such a project works.
//
// Usage: node scripts/doc-test.mjs [--from-tarballs [dir]] [--only <substring of a file name>] [--module-system esm|commonjs] [--keep]
// `--module-system` runs the programs in one project only (default: the ESM project, then the CommonJS one).
// Exits 1 with a list of failures. Environment: PNPM (command to run pnpm; default pnpm on PATH, else
// `npx -y pnpm@<packageManager>`).

import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkLog } from './lib/check-log.mjs';
import { pnpmCommand, readJson, run, runAsync } from './lib/commands.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const keep = args.includes('--keep');
const tarballIndex = args.indexOf('--from-tarballs');
const fromTarballs = tarballIndex >= 0;
const tarballDir =
  fromTarballs && args[tarballIndex + 1] && !args[tarballIndex + 1].startsWith('--')
    ? resolve(args[tarballIndex + 1])
    : undefined;
const onlyIndex = args.indexOf('--only');
const only = onlyIndex >= 0 ? args[onlyIndex + 1] : undefined;
const moduleSystemIndex = args.indexOf('--module-system');
/** The projects the programs run in: `esm` (a `"type": "module"` project, the tsc output) and `commonjs` (an `npm init -y` project, `.mts` run with tsx). */
const moduleSystems = moduleSystemIndex >= 0 ? [args[moduleSystemIndex + 1]] : ['esm', 'commonjs'];
if (!moduleSystems.every((m) => m === 'esm' || m === 'commonjs')) {
  console.error(`--module-system takes esm or commonjs (got ${moduleSystems[0]})`);
  process.exit(2);
}

/** The marker, alone on the line before a fence, of a block that is not a complete program. */
export const FRAGMENT_MARKER = '<!-- fragment -->';
/** Languages of blocks that are programs (unless marked). */
const PROGRAM_LANGUAGES = new Set(['ts', 'typescript', 'js', 'mjs', 'javascript']);
/** How long one program may run. */
const PROGRAM_TIMEOUT_MS = 15_000;
/** Third-party packages the snippets import (and what type-checks them), installed beside the tarballs. */
const SNIPPET_DEPENDENCIES = [
  'express',
  'fastify',
  'koa',
  'hono',
  '@hono/node-server',
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/platform-express',
  'reflect-metadata',
  'rxjs',
  'vitest',
  'fast-check',
  'ioredis',
  'redis',
  '@valkey/valkey-glide',
  'prom-client',
  '@opentelemetry/api',
  '@types/express',
  '@types/koa',
  '@types/node',
  'typescript',
  'tsx',
];

const { failures, fail, ok, step, seconds: elapsed } = checkLog();

/** The tsconfig.json of both scratch projects: tsc reads it in the ESM one, tsx in the CommonJS one (its decorators). */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    lib: ['ES2022'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    moduleDetection: 'force',
    strict: true,
    skipLibCheck: true,
    // Nest's decorators are TypeScript's legacy ones, with the metadata its injector reads (what a Nest project's tsconfig has).
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    types: ['node'],
    rootDir: 'snippets',
    outDir: 'out',
  },
  include: ['snippets'],
};

/**
 * The fenced blocks of a markdown text: `{ line, lang, code, fragment }`, `line` 1-based (the fence's),
 * `fragment` true when the closest non-blank line above the fence is the marker.
 */
export function codeBlocks(text) {
  const lines = text.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```\s*([\w+-]*)/.exec(lines[i]);
    if (!open) continue;
    let j = i + 1;
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j])) j++;
    let k = i - 1;
    while (k >= 0 && lines[k].trim() === '') k--;
    blocks.push({
      line: i + 1,
      lang: open[2].toLowerCase(),
      code: lines.slice(i + 1, j).join('\n'),
      fragment: k >= 0 && lines[k].trim() === FRAGMENT_MARKER,
    });
    i = j;
  }
  return blocks;
}

/** Whether a block of {@link codeBlocks} is a program to type-check and run: TypeScript or JavaScript, not marked. */
export function isProgram(block) {
  return PROGRAM_LANGUAGES.has(block.lang) && !block.fragment;
}

/**
 * What a program says it prints: on each line that calls `console.log(`, the comment after its last
 * ` // `, up to ` (` (an explanation) or `…` (anything from there on). The doc test checks that each
 * one starts a line of the program's output, in order. Empty (a comment that starts with `…`): none.
 */
export function expectedOutput(code) {
  const expected = [];
  for (const line of code.split('\n')) {
    if (!line.includes('console.log(')) continue;
    const at = line.lastIndexOf(' // ');
    if (at < 0) continue;
    const text = line
      .slice(at + 4)
      .split(/ \(|…/)[0]
      .trim();
    if (text) expected.push(text);
  }
  return expected;
}

/** The first of `expected` that no output line starts with, in order after the previous match; undefined when all match. */
export function missingOutput(stdout, expected) {
  const lines = stdout.split('\n');
  let from = 0;
  for (const text of expected) {
    const found = lines.findIndex((line, i) => i >= from && line.startsWith(text));
    if (found < 0) return text;
    from = found + 1;
  }
  return undefined;
}

/** The markdown files whose blocks are tested: the root README, each package's and each example's README, docs/*.md. */
export function markdownFiles() {
  const files = ['README.md'];
  for (const parent of ['packages', 'examples']) {
    for (const dir of readdirSync(join(root, parent)).sort())
      if (existsSync(join(root, parent, dir, 'README.md'))) files.push(`${parent}/${dir}/README.md`);
  }
  if (existsSync(join(root, 'docs')))
    for (const name of readdirSync(join(root, 'docs')).sort()) if (name.endsWith('.md')) files.push(`docs/${name}`);
  return files;
}

/** The workspace's publishable packages: `{ dir, name, pkg }`. */
function workspacePackages() {
  const found = [];
  for (const dir of readdirSync(join(root, 'packages')).sort()) {
    const file = join(root, 'packages', dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = readJson(file);
    found.push({ dir: join(root, 'packages', dir), name: pkg.name, pkg });
  }
  return found;
}

/** A TCP port free right now on 127.0.0.1. */
function freePort() {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePromise(port));
    });
  });
}

/** The first line of Redis's reply to `command` (an inline command: `PING`, `FLUSHALL`) on `port`; '' when it could not connect. */
function redisCommand(port, command) {
  return new Promise((resolvePromise) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk) => {
      reply += chunk;
      if (reply.includes('\r\n')) socket.end();
    });
    socket.on('close', () => resolvePromise(reply.split('\r\n')[0]));
    socket.on('error', () => resolvePromise(''));
  });
}

/** Resolves once `port` answers PING with PONG, or rejects after `ms`. */
async function waitForRedis(port, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    if ((await redisCommand(port, 'PING')) === '+PONG') return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Where a workspace package found `name` (its own node_modules first), or undefined. */
function installedDependency(name, packages) {
  const places = [
    ...packages.map((p) => p.dir),
    ...readdirSync(join(root, 'examples')).map((d) => join(root, 'examples', d)),
    root,
  ];
  for (const place of places) {
    const dir = join(place, 'node_modules', ...name.split('/'));
    if (existsSync(join(dir, 'package.json'))) return dir;
  }
  return undefined;
}

function link(target, path) {
  mkdirSync(dirname(path), { recursive: true });
  symlinkSync(target, path, 'dir');
}

let work;
function finish() {
  const seconds = elapsed();
  if (work && !keep) rmSync(work, { recursive: true, force: true });
  else if (work) console.log(`\nkept ${work}`);
  if (failures.length) {
    console.log(`\n${failures.length} failure(s) in ${seconds}s:`);
    for (const f of failures) console.log(`- ${f.split('\n')[0]}`);
    process.exit(1);
  }
  console.log(`\ndoc test passed in ${seconds}s`);
  process.exit(0);
}

/** The doc test itself; runs when this file is the program (a test imports `codeBlocks` without running it). */
async function main() {
  // ---------------------------------------------------------------------------------------------------
  step('Code blocks of the READMEs and docs/');
  const packages = workspacePackages();
  const programs = [];
  for (const file of markdownFiles()) {
    const text = readFileSync(join(root, file), 'utf8');
    const blocks = codeBlocks(text);
    const pkg = packages.find((p) => relative(root, p.dir) === dirname(file));
    if (pkg && !pkg.pkg.private) {
      // The install line first: the first block, a shell block, whose first command installs this package.
      const first = blocks[0];
      const command = first?.code.split('\n').find((l) => l.trim() && !l.trim().startsWith('#'));
      if (
        !first ||
        first.lang !== 'sh' ||
        !command ||
        !new RegExp(`^npm install (--save-dev )?${pkg.name.replace('/', '\\/')}( |$)`).test(command.trim())
      ) {
        fail(
          `${file}: the first code block must be \`\`\`sh with \`npm install ${pkg.name} …\` (found ${first ? `\`\`\`${first.lang} at line ${first.line}` : 'no block'})`,
        );
      } else ok(`${file}: opens with \`${command.trim()}\``);
    }
    if (file === 'README.md') {
      const first = blocks[0];
      if (!first || first.lang !== 'sh' || !/^npm install @rl\//m.test(first.code))
        fail('README.md: the first code block must be ```sh with `npm install @rl/… …`');
      else ok('README.md: opens with an npm install line');
    }
    let count = 0;
    for (const block of blocks) {
      if (!isProgram(block)) continue;
      if (only && !file.includes(only)) continue;
      count++;
      const slug = `${file
        .replace(/\.md$/, '')
        .replace(/[^\w]+/g, '-')
        .replace(/^-|-$/g, '')}-L${block.line}`;
      programs.push({ file, line: block.line, slug, code: block.code, redis: block.code.includes('REDIS_URL') });
    }
    const fragments = blocks.filter((b) => PROGRAM_LANGUAGES.has(b.lang) && b.fragment).length;
    console.log(
      `  ${file}: ${count} program(s), ${fragments} fragment(s), ${blocks.length - count - fragments} block(s) of other languages`,
    );
  }
  for (const p of packages) {
    if (!p.pkg.private && !existsSync(join(p.dir, 'README.md')))
      fail(`${p.name}: ${relative(root, p.dir)}/README.md is missing (every published package ships one)`);
  }
  if (programs.length === 0) {
    fail('no program found');
    finish();
  }

  work = mkdtempSync(join(tmpdir(), 'rl-doc-test-'));
  const project = join(work, 'project');
  mkdirSync(project);
  /** The failures of the checks above: the project's setup stops at a failure of its own only. */
  const docFailures = failures.length;
  const setupFailed = () => failures.length > docFailures;

  if (!fromTarballs) {
    // -------------------------------------------------------------------------------------------------
    step(`a scratch project linked to the workspace: ${project}`);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'rl-doc-test', private: true, type: 'module' }, null, 2),
    );
    for (const p of packages) {
      if (p.pkg.private) continue;
      if (!existsSync(join(p.dir, 'dist')))
        fail(`${p.name}: ${relative(root, p.dir)}/dist is missing; run \`pnpm build\` first`);
      link(p.dir, join(project, 'node_modules', ...p.name.split('/')));
    }
    for (const name of SNIPPET_DEPENDENCIES) {
      const dir = installedDependency(name, packages);
      if (!dir) fail(`${name}: not installed in the workspace (pnpm install)`);
      else link(dir, join(project, 'node_modules', ...name.split('/')));
    }
    if (setupFailed()) finish();
    ok(
      `linked ${packages.filter((p) => !p.pkg.private).length} packages and ${SNIPPET_DEPENDENCIES.length} dependencies`,
    );
  } else {
    // -------------------------------------------------------------------------------------------------
    const tarballs = tarballDir ?? join(work, 'tarballs');
    mkdirSync(tarballs, { recursive: true });
    let files = readdirSync(tarballs).filter((f) => f.endsWith('.tgz'));
    if (files.length === 0) {
      // pnpm 9 has no recursive pack (`pnpm -r pack` is pnpm 10's): `pnpm pack` in each publishable
      // package, which turns its workspace: ranges into versions. Private packages are never packed.
      step(`pnpm pack of each publishable package into ${tarballs}`);
      const [pnpm, pnpmArgs] = pnpmCommand(root);
      const packed = await Promise.all(
        packages
          .filter((p) => !p.pkg.private)
          .map(async (p) => ({
            p,
            result: await runAsync(pnpm, [...pnpmArgs, 'pack', '--pack-destination', tarballs], { cwd: p.dir }),
          })),
      );
      for (const { p, result } of packed)
        if (result.status !== 0)
          fail(`${p.name}: pnpm pack failed (exit ${result.status})\n${result.stdout}${result.stderr}`);
      if (setupFailed()) finish();
      files = readdirSync(tarballs).filter((f) => f.endsWith('.tgz'));
    } else step(`the tarballs in ${tarballs}`);
    // Private packages are never installed by a user: leave them out even if pnpm packed them.
    const privateNames = packages.filter((p) => p.pkg.private).map((p) => p.name.replace(/^@/, '').replace('/', '-'));
    files = files.filter((f) => !privateNames.some((name) => f.startsWith(`${name}-`)));
    for (const f of files) ok(f);
    if (files.length === 0) fail('no tarball');
    if (setupFailed()) finish();

    step(`npm install of the tarballs and the snippets' dependencies into ${project}`);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'rl-doc-test', version: '0.0.0', private: true, type: 'module' }, null, 2),
    );
    // The range a workspace package, the root or an example (tsx's) tests with.
    const examples = readdirSync(join(root, 'examples'))
      .filter((d) => existsSync(join(root, 'examples', d, 'package.json')))
      .map((d) => ({ pkg: readJson(join(root, 'examples', d, 'package.json')) }));
    const rangeOf = (name) => {
      for (const p of [...packages, { pkg: readJson(join(root, 'package.json')) }, ...examples]) {
        const range = p.pkg.devDependencies?.[name] ?? p.pkg.dependencies?.[name];
        if (range && !range.startsWith('npm:') && !range.startsWith('workspace:')) return range;
      }
      return 'latest';
    };
    const specs = [
      ...files.map((f) => join(tarballs, f)),
      ...SNIPPET_DEPENDENCIES.map((name) => `${name}@${rangeOf(name)}`),
    ];
    console.log(`  npm install ${specs.map((s) => (s.endsWith('.tgz') ? s.replace(/^.*\//, '') : s)).join(' ')}`);
    const install = run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--loglevel=error', '--no-package-lock', ...specs],
      {
        cwd: project,
        env: { ...process.env, npm_config_workspaces: 'false' },
      },
    );
    if (install.status !== 0) {
      fail(`npm install failed (exit ${install.status})\n${install.stdout}${install.stderr}`);
      finish();
    }
    ok(`installed ${files.length} tarballs and ${SNIPPET_DEPENDENCIES.length} dependencies`);
  }

  // -----------------------------------------------------------------------------------------------------
  step(`tsc over ${programs.length} programs`);
  const sources = join(project, 'snippets');
  mkdirSync(sources);
  for (const p of programs) writeFileSync(join(sources, `${p.slug}.ts`), `${p.code}\n`);
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  const tsc = join(project, 'node_modules', 'typescript', 'bin', 'tsc');
  const checked = run(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], { cwd: project });
  // One diagnostic per entry: tsc indents the continuation lines of an overload error.
  const diagnostics = [];
  for (const line of `${checked.stdout}${checked.stderr}`.split('\n')) {
    if (!line.trim()) continue;
    if (/^\s/.test(line) && diagnostics.length) diagnostics[diagnostics.length - 1] += `\n      ${line.trim()}`;
    else diagnostics.push(line);
  }
  for (const p of programs) {
    const own = diagnostics.filter((d) => d.startsWith(`snippets/${p.slug}.ts(`));
    p.typeErrors = own;
    const where = `${p.file}:${p.line}`;
    if (own.length) {
      // snippets/x.ts(3,5) is line 3 of the block: the README's line is the fence's + 3.
      const shown = own.map((d) =>
        d.replace(/^snippets\/[^(]+\((\d+),(\d+)\)/, (_, l, c) => `${p.file}:${p.line + Number(l)}:${c}`),
      );
      fail(`${where}: ${own.length} type error(s)\n    ${shown.join('\n    ')}`);
    } else ok(`${where} type-checks`);
  }
  const stray = diagnostics.filter((d) => !programs.some((p) => d.startsWith(`snippets/${p.slug}.ts(`)));
  if (checked.status !== 0 && stray.length) fail(`tsc: ${stray.join('\n')}`);

  // -----------------------------------------------------------------------------------------------------
  let redis;
  let redisPort;
  const env = { ...process.env };
  delete env.REDIS_URL;
  if (programs.some((p) => p.redis && !p.typeErrors.length)) {
    redisPort = await freePort();
    const dir = join(work, 'redis');
    mkdirSync(dir);
    step(`redis-server on 127.0.0.1:${redisPort} for the Redis snippets`);
    redis = spawn(
      'redis-server',
      ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: 'ignore' },
    );
    redis.on('error', (error) => fail(`redis-server: ${error.message} (is it on the PATH?)`));
    try {
      await waitForRedis(redisPort, 10_000);
      ok('PONG');
    } catch (error) {
      fail(error.message);
    }
    env.REDIS_URL = `redis://127.0.0.1:${redisPort}`;
  }

  const runnable = programs.filter((p) => !p.typeErrors.length);
  if (moduleSystems.includes('esm')) {
    step(`running the programs in the ESM project (each must exit 0 within ${PROGRAM_TIMEOUT_MS / 1000}s)`);
    await runPrograms(runnable, { cwd: project, env, label: '', argv: (p) => [join(project, 'out', `${p.slug}.js`)] });
  }
  if (moduleSystems.includes('commonjs')) {
    const commonJs = join(work, 'project-commonjs');
    step(`a fresh CommonJS project (npm init -y), each program saved as .mts and run with tsx: ${commonJs}`);
    if (makeCommonJsProject(commonJs, project, runnable)) {
      // Each program finds Redis as it did in the first project (a key it counts starts fresh).
      if (redisPort !== undefined && moduleSystems.includes('esm')) {
        const flushed = await redisCommand(redisPort, 'FLUSHALL');
        if (flushed !== '+OK') fail(`FLUSHALL before the CommonJS project answered ${JSON.stringify(flushed)}`);
      }
      await runPrograms(runnable, {
        cwd: commonJs,
        env,
        label: ' (CommonJS project, .mts with tsx)',
        argv: (p) => ['--import', 'tsx', join('snippets', `${p.slug}.mts`)],
      });
    }
  }
  if (redis) redis.kill('SIGTERM');
  finish();
}

/**
 * The project a CommonJS user has: `npm init -y` (no `"type": "module"`), the first project's
 * node_modules, its tsconfig.json (tsx reads the decorators from it), and each program as
 * `snippets/<slug>.mts`, as the root README says to save one there. False (a failure noted) when it could not be made.
 */
function makeCommonJsProject(dir, esmProject, list) {
  mkdirSync(join(dir, 'snippets'), { recursive: true });
  const init = run('npm', ['init', '-y'], { cwd: dir, env: { ...process.env, npm_config_workspaces: 'false' } });
  if (init.status !== 0) {
    fail(`npm init -y failed (exit ${init.status})\n${init.stdout}${init.stderr}`);
    return false;
  }
  const type = readJson(join(dir, 'package.json')).type;
  if (type === 'module') {
    fail('npm init -y wrote "type": "module": this npm makes no CommonJS project');
    return false;
  }
  ok(`npm init -y: package.json with ${type === undefined ? 'no "type"' : `"type": ${JSON.stringify(type)}`}`);
  symlinkSync(join(esmProject, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  for (const p of list) writeFileSync(join(dir, 'snippets', `${p.slug}.mts`), `${p.code}\n`);
  return true;
}

/** The first `lines` non-empty lines of `text` joined with ` | `, at most 160 characters. */
const oneLine = (text, lines) => text.split('\n').filter(Boolean).slice(0, lines).join(' | ').slice(0, 160);

/**
 * Runs each program with node and `argv(p)` in `cwd`, two at a time: each must exit 0 within
 * PROGRAM_TIMEOUT_MS and print what its comments say. `label` follows the program's place in a line.
 * A program that exits non-zero, prints something else or is still running after PROGRAM_TIMEOUT_MS
 * is run once more before it fails, and the line says so: CI runs this beside the test suite on two
 * cores, where a program's first Redis call can pass the store's 50 ms default timeout and be
 * answered by the failure policy (the programs use the defaults a user gets), and where a program
 * starved of CPU beside the workerd tests has run past 15 s.
 */
async function runPrograms(list, { cwd, env, label, argv }) {
  const queue = [...list];
  /** What is wrong with one run of `p` (undefined: nothing), and how long it took. */
  const runOnce = async (p) => {
    const t0 = Date.now();
    const result = await runAsync(process.execPath, argv(p), { cwd, env, timeoutMs: PROGRAM_TIMEOUT_MS });
    const ms = Date.now() - t0;
    if (result.timedOut)
      return {
        result,
        ms,
        wrong: `still running after ${PROGRAM_TIMEOUT_MS / 1000}s (a program must close what it opens)\n${result.stdout}${result.stderr}`,
      };
    if (result.status !== 0) return { result, ms, wrong: `exit ${result.status}\n${result.stdout}${result.stderr}` };
    const missing = missingOutput(result.stdout, expectedOutput(p.code));
    if (missing !== undefined)
      return {
        result,
        ms,
        wrong: `printed no line starting with ${JSON.stringify(missing)} (the comment beside its console.log)\n${result.stdout}`,
      };
    return { result, ms, wrong: undefined };
  };
  const worker = async () => {
    for (let p = queue.shift(); p; p = queue.shift()) {
      const where = `${p.file}:${p.line}${label}`;
      const first = await runOnce(p);
      const run = first.wrong === undefined ? first : await runOnce(p);
      if (run.wrong !== undefined) {
        fail(`${where}: ${run.wrong}`);
        continue;
      }
      let again = '';
      if (run !== first) {
        const [reason, ...printed] = first.wrong.split('\n');
        const shown = oneLine(printed.join('\n'), Infinity);
        again = ` on a second run (the first: ${reason}${shown ? `; it printed: ${shown}` : ''})`;
      }
      const out = oneLine(run.result.stdout, 3);
      ok(`${where} ran in ${run.ms} ms${again}${out ? `: ${out}` : ''}`);
    }
  };
  await Promise.all([worker(), worker()]);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();

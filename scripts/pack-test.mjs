#!/usr/bin/env node
// Packed-tarball import test (DESIGN principle 10: packages that import cleanly everywhere).
//
// Assumes `pnpm build` ran (it builds nothing). For every publishable package in packages/*:
//   1. `pnpm pack` it (workspace:^ ranges become real versions, only `files` are kept);
//   2. install all the tarballs, plus their peers (frameworks, ioredis, the optional test peers) and
//      the @types a consumer needs, with npm into a temporary directory outside the monorepo;
//   3. check each package.json: `sideEffects: false`, `engines.node` >= 20, no `workspace:` left,
//      frameworks and ioredis only as peers, @rl/core without runtime dependencies, every export
//      with `types` and `default` files for both `import` and `require`;
//   4. `require()` and `import()` every entry point (`@rl/core/testing` too) from plain Node: both
//      work, resolve to the CJS and ESM builds, and expose the same names;
//   5. a tiny limiter runs through the CJS and the ESM builds;
//   6. `tsc --noEmit` type-checks an ESM consumer (.mts) and a CJS consumer (.cts) (NodeNext).
// Exits 1 with a list of failures. Usage: node scripts/pack-test.mjs [--only @rl/core,@rl/store-memory] [--keep]
// Environment: PNPM (command to run pnpm, default: pnpm on PATH, else `npx -y pnpm@<packageManager>`).

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const keep = args.includes('--keep');
const onlyArg = args.indexOf('--only');
const only = onlyArg >= 0 ? new Set((args[onlyArg + 1] ?? '').split(',').filter(Boolean)) : undefined;

const started = Date.now();
const failures = [];
const fail = (message) => {
  failures.push(message);
  console.log(`  FAIL ${message}`);
};
const ok = (message) => console.log(`  ok   ${message}`);
const step = (message) => console.log(`\n== ${message} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
let work; // the temporary directory, removed by finish() unless --keep
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

/** Peers that must never be runtime dependencies of a package. */
const FRAMEWORKS = ['express', 'fastify', 'koa', 'ioredis'];
/** Names each package must export (in both formats). The rest is compared between CJS and ESM. */
const EXPECTED_NAMES = {
  '@rl/core': [
    'createLimiter',
    'Limiter',
    'combineLimiters',
    'fixedWindow',
    'slidingWindowLog',
    'slidingWindowCounter',
    'tokenBucket',
    'leakyBucket',
    'concurrency',
    'parseDuration',
    'systemClock',
    'RateLimitError',
    'InvalidOptionError',
    'StoreError',
  ],
  '@rl/store-memory': ['MemoryStore'],
  '@rl/store-redis': ['RedisStore'],
  '@rl/express': ['rateLimit'],
  '@rl/fastify': ['default'],
  '@rl/koa': ['rateLimit'],
};

function run(command, commandArgs, options = {}) {
  const result = spawnSync(command, commandArgs, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  return { status: result.error ? -1 : result.status, stdout: result.stdout ?? '', stderr: (result.stderr ?? '') + (result.error ? String(result.error) : '') };
}

function pnpmCommand() {
  if (process.env.PNPM) {
    const [command, ...rest] = process.env.PNPM.split(' ');
    return [command, rest];
  }
  if (run('pnpm', ['--version']).status === 0) return ['pnpm', []];
  const version = (readJson(join(root, 'package.json')).packageManager ?? 'pnpm@9').replace(/\+.*$/, '');
  return ['npx', ['-y', version]];
}

/** Minimum major version of a range such as `>=20`, `>=20.11.0`, `^20 || ^22`; undefined when unclear. */
function minimumMajor(range) {
  const majors = String(range)
    .split('||')
    .map((part) => /(?:>=|\^|~|=)?\s*v?(\d+)/.exec(part.trim()))
    .map((match) => (match ? Number(match[1]) : undefined));
  if (majors.some((major) => major === undefined)) return undefined;
  return Math.min(...majors);
}

// ---------------------------------------------------------------------------------------------------
step('Publishable packages');
const packages = [];
for (const dir of readdirSync(join(root, 'packages')).sort()) {
  const file = join(root, 'packages', dir, 'package.json');
  if (!existsSync(file)) continue;
  const pkg = readJson(file);
  if (pkg.private) continue;
  if (only && !only.has(pkg.name)) continue;
  if (!existsSync(join(root, 'packages', dir, 'dist'))) {
    fail(`${pkg.name}: packages/${dir}/dist is missing; run \`pnpm build\` first`);
    continue;
  }
  packages.push({ dir: join(root, 'packages', dir), name: pkg.name, source: pkg });
  ok(`${pkg.name}@${pkg.version} (packages/${dir})`);
}
if (packages.length === 0) fail('no publishable package found');
if (failures.length) finish();

work = mkdtempSync(join(tmpdir(), 'rl-pack-test-'));
const tarballs = join(work, 'tarballs');
const app = join(work, 'app');
mkdirSync(tarballs);
mkdirSync(app);

{
  // -------------------------------------------------------------------------------------------------
  step(`pnpm pack into ${tarballs}`);
  const [pnpm, pnpmArgs] = pnpmCommand();
  for (const p of packages) {
    const before = new Set(readdirSync(tarballs));
    const result = run(pnpm, [...pnpmArgs, 'pack', '--pack-destination', tarballs], { cwd: p.dir });
    const created = readdirSync(tarballs).filter((f) => f.endsWith('.tgz') && !before.has(f));
    if (result.status !== 0 || created.length !== 1) {
      fail(`${p.name}: pnpm pack failed (exit ${result.status})\n${result.stdout}${result.stderr}`);
      continue;
    }
    p.tarball = join(tarballs, created[0]);
    ok(`${p.name} -> ${created[0]}`);
  }
  if (failures.length) finish();

  // -------------------------------------------------------------------------------------------------
  step(`npm install of the tarballs and their peers into ${app}`);
  // Peers (and the @types a TypeScript consumer needs), at the ranges the packages test with.
  const wanted = new Map();
  const devRange = (name) => {
    for (const p of packages) if (p.source.devDependencies?.[name]) return p.source.devDependencies[name];
    return readJson(join(root, 'package.json')).devDependencies?.[name];
  };
  for (const p of packages) {
    for (const [name, range] of Object.entries(p.source.peerDependencies ?? {})) {
      if (name.startsWith('@rl/')) continue;
      const pick = devRange(name) ?? range;
      wanted.set(name, pick.startsWith('npm:') ? range : pick);
      const types = `@types/${name.replace(/^@(.*)\/(.*)$/, '$1__$2')}`;
      if (devRange(types)) wanted.set(types, devRange(types));
    }
  }
  wanted.set('@types/node', devRange('@types/node') ?? '^20');
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'rl-pack-consumer', version: '0.0.0', private: true }, null, 2));
  const specs = [...packages.map((p) => p.tarball), ...[...wanted].map(([name, range]) => `${name}@${range}`)];
  console.log(`  npm install ${specs.map((s) => s.replace(tarballs + '/', '')).join(' ')}`);
  const install = run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline', '--loglevel=error', '--no-package-lock', ...specs], {
    cwd: app,
    env: { ...process.env, npm_config_workspaces: 'false' },
  });
  if (install.status !== 0) {
    fail(`npm install failed (exit ${install.status})\n${install.stdout}${install.stderr}`);
    finish();
  }
  ok(`installed ${packages.length} tarballs and ${wanted.size} peers`);

  // -------------------------------------------------------------------------------------------------
  step('package.json of each packed package');
  const entries = []; // { pkg, subpath, specifier }
  for (const p of packages) {
    const base = join(app, 'node_modules', ...p.name.split('/'));
    const pkg = readJson(join(base, 'package.json'));
    const count = failures.length;
    const where = `${p.name} package.json`;
    if (pkg.sideEffects !== false) fail(`${where}: "sideEffects" is ${JSON.stringify(pkg.sideEffects)}, expected false`);
    const major = minimumMajor(pkg.engines?.node);
    if (major === undefined || major < 20) fail(`${where}: "engines.node" is ${JSON.stringify(pkg.engines?.node)}, expected >=20`);
    const text = JSON.stringify(pkg);
    if (text.includes('workspace:')) fail(`${where}: a "workspace:" range was left in the packed package.json`);
    const deps = pkg.dependencies ?? {};
    if (p.name === '@rl/core' && Object.keys(deps).length > 0) fail(`${where}: @rl/core must have no runtime dependencies, has ${Object.keys(deps).join(', ')}`);
    for (const name of FRAMEWORKS) {
      if (deps[name] || pkg.optionalDependencies?.[name]) fail(`${where}: ${name} is a dependency; it must be a peer dependency`);
    }
    if (deps['@rl/core']) fail(`${where}: @rl/core must be a peer dependency (one copy of the core per app), not a dependency`);
    if (pkg.type !== 'module') fail(`${where}: "type" is ${JSON.stringify(pkg.type)}, expected "module"`);
    if (!pkg.exports || typeof pkg.exports !== 'object') {
      fail(`${where}: no "exports" map`);
      continue;
    }
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (subpath === './package.json') continue;
      const specifier = subpath === '.' ? p.name : `${p.name}/${subpath.slice(2)}`;
      for (const condition of ['import', 'require']) {
        for (const field of ['types', 'default']) {
          const file = target?.[condition]?.[field];
          if (typeof file !== 'string') fail(`${specifier}: exports["${subpath}"].${condition}.${field} is missing`);
          else if (!existsSync(join(base, file))) fail(`${specifier}: ${condition}.${field} ${file} is not in the tarball`);
        }
      }
      const types = [target?.import?.types, target?.require?.types];
      if (types[0] && !/\.d\.(ts|mts)$/.test(types[0])) fail(`${specifier}: import.types ${types[0]} should be a .d.ts/.d.mts file`);
      if (types[1] && !/\.d\.cts$/.test(types[1])) fail(`${specifier}: require.types ${types[1]} should be a .d.cts file (type: module)`);
      if (target?.require?.default && !/\.cjs$/.test(target.require.default)) fail(`${specifier}: require.default should be a .cjs file`);
      entries.push({ pkg: p.name, subpath, specifier, cjs: target?.require?.default, esm: target?.import?.default });
    }
    for (const field of ['main', 'types']) {
      if (pkg[field] && !existsSync(join(base, pkg[field]))) fail(`${where}: "${field}" ${pkg[field]} is not in the tarball`);
    }
    if (failures.length === count) ok(`${p.name}: sideEffects false, engines.node ${pkg.engines?.node}, deps ${JSON.stringify(Object.keys(deps))}, peers ${JSON.stringify(Object.keys(pkg.peerDependencies ?? {}))}`);
  }

  // -------------------------------------------------------------------------------------------------
  step('require() and import() of every entry point');
  const list = JSON.stringify(entries.map((e) => e.specifier));
  const cjsProbe = `
    const out = {};
    for (const spec of ${list}) {
      try { const m = require(spec); out[spec] = { file: require.resolve(spec), names: Object.keys(m).sort() }; }
      catch (e) { out[spec] = { error: String(e && e.stack || e) }; }
    }
    process.stdout.write(JSON.stringify(out));`;
  const esmProbe = `
    const out = {};
    for (const spec of ${list}) {
      try { const m = await import(spec); out[spec] = { file: import.meta.resolve(spec), names: Object.keys(m).sort() }; }
      catch (e) { out[spec] = { error: String(e && e.stack || e) }; }
    }
    process.stdout.write(JSON.stringify(out));`;
  writeFileSync(join(app, 'probe.cjs'), cjsProbe);
  writeFileSync(join(app, 'probe.mjs'), esmProbe);
  const probe = (file) => {
    const result = run(process.execPath, [file], { cwd: app });
    if (result.status !== 0) {
      fail(`node ${file} exited with ${result.status}\n${result.stderr}`);
      return {};
    }
    return JSON.parse(result.stdout);
  };
  const cjs = probe('probe.cjs');
  const esm = probe('probe.mjs');
  for (const e of entries) {
    const c = cjs[e.specifier];
    const m = esm[e.specifier];
    if (!c || c.error) fail(`require('${e.specifier}') failed: ${c?.error ?? 'no result'}`);
    if (!m || m.error) fail(`import('${e.specifier}') failed: ${m?.error ?? 'no result'}`);
    if (!c || c.error || !m || m.error) continue;
    if (!c.file.endsWith('.cjs')) fail(`require('${e.specifier}') resolved to ${c.file}, not a .cjs file`);
    if (!m.file.endsWith('.js') && !m.file.endsWith('.mjs')) fail(`import('${e.specifier}') resolved to ${m.file}, not an ESM file`);
    const onlyCjs = c.names.filter((n) => !m.names.includes(n) && n !== '__esModule');
    const onlyEsm = m.names.filter((n) => !c.names.includes(n));
    if (onlyCjs.length || onlyEsm.length) {
      fail(`${e.specifier}: CJS and ESM names differ (only CJS: ${onlyCjs.join(', ') || '-'}; only ESM: ${onlyEsm.join(', ') || '-'})`);
    }
    const expected = e.subpath === '.' ? (EXPECTED_NAMES[e.pkg] ?? []) : [];
    const missing = expected.filter((n) => !c.names.includes(n) || !m.names.includes(n));
    if (missing.length) fail(`${e.specifier}: missing exports ${missing.join(', ')}`);
    if (!onlyCjs.length && !onlyEsm.length && !missing.length) ok(`${e.specifier}: CJS and ESM both load, ${m.names.length} names (${m.names.slice(0, 6).join(', ')}${m.names.length > 6 ? ', ...' : ''})`);
  }

  // -------------------------------------------------------------------------------------------------
  const names = new Set(packages.map((p) => p.name));
  if (names.has('@rl/core') && names.has('@rl/store-memory')) {
    step('a limiter on a MemoryStore, from CJS and from ESM');
    const body = (load) => `
      ${load}
      const store = new MemoryStore({ sweepInterval: false });
      const limiter = createLimiter({ algorithm: tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' }), store });
      const decisions = [];
      for (let i = 0; i < 3; i++) decisions.push((await limiter.consume('k')).allowed);
      await store.close?.();
      process.stdout.write(JSON.stringify(decisions));`;
    writeFileSync(join(app, 'smoke.cjs'), `(async () => {${body("const { createLimiter, tokenBucket } = require('@rl/core'); const { MemoryStore } = require('@rl/store-memory');")}})().catch((e) => { console.error(e); process.exit(1); });`);
    writeFileSync(join(app, 'smoke.mjs'), body("import { createLimiter, tokenBucket } from '@rl/core'; import { MemoryStore } from '@rl/store-memory';"));
    for (const file of ['smoke.cjs', 'smoke.mjs']) {
      const result = run(process.execPath, [file], { cwd: app });
      if (result.status !== 0 || result.stdout !== '[true,true,false]') fail(`${file}: expected [true,true,false], got ${result.stdout || '-'} (exit ${result.status})\n${result.stderr}`);
      else ok(`${file}: allowed, allowed, denied`);
    }
  }

  // -------------------------------------------------------------------------------------------------
  step('tsc --noEmit of an ESM (.mts) and a CJS (.cts) consumer');
  const imports = entries.map((e, i) => `import * as m${i} from '${e.specifier}';`);
  const uses = `export const modules = [${entries.map((_, i) => `m${i}`).join(', ')}];`;
  let typed = '';
  if (names.has('@rl/core') && names.has('@rl/store-memory')) {
    typed += `
import { createLimiter, tokenBucket, RateLimitError, type Decision } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
const limiter = createLimiter({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), store: new MemoryStore() });
export const decision: Promise<Decision> = limiter.consume('key');
export const isError = (e: unknown): boolean => e instanceof RateLimitError;
`;
  }
  writeFileSync(join(app, 'consumer.mts'), `${imports.join('\n')}\n${typed}\n${uses}\n`);
  writeFileSync(join(app, 'consumer.cts'), `${imports.join('\n')}\n${typed}\n${uses}\n`);
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
        },
        files: ['consumer.mts', 'consumer.cts'],
      },
      null,
      2,
    ),
  );
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const check = run(process.execPath, [tsc, '-p', 'tsconfig.json', '--traceResolution'], { cwd: app });
  const diagnostics = check.stdout
    .split('\n')
    .filter((line) => /error TS\d+/.test(line))
    .join('\n');
  if (check.status !== 0) fail(`tsc found errors:\n${diagnostics || check.stdout.slice(-4000)}${check.stderr}`);
  else {
    // Each condition must have resolved to its own declaration file.
    for (const e of entries) {
      const resolved = [...check.stdout.matchAll(new RegExp(`Module name '${e.specifier.replace(/[/.]/g, '\\$&')}' was successfully resolved to '([^']+)'`, 'g'))].map((m) => m[1]);
      const dcts = resolved.some((f) => f.endsWith('.d.cts'));
      const dts = resolved.some((f) => /\.d\.m?ts$/.test(f));
      if (!dcts || !dts) fail(`${e.specifier}: tsc resolved ${JSON.stringify([...new Set(resolved)])}; expected a .d.ts (import) and a .d.cts (require)`);
    }
    ok(`consumer.mts and consumer.cts type-check against ${entries.length} entry points`);
  }
}
finish();

function finish() {
  if (work && keep) console.log(`\nkept ${work}`);
  else if (work) rmSync(work, { recursive: true, force: true });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (failures.length) {
    console.error(`\npack-test: ${failures.length} failure(s) in ${seconds}s:`);
    for (const f of failures) console.error(`  - ${f.split('\n')[0]}`);
    process.exit(1);
  }
  console.log(`\npack-test: all checks passed in ${seconds}s`);
  process.exit(0);
}

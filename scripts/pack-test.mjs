#!/usr/bin/env node
// Packed-tarball import test (DESIGN principle 10: packages that import cleanly everywhere).
//
// Assumes `pnpm build` ran (it builds nothing). For every publishable package in packages/*:
//   1. `pnpm pack` it (workspace:^ ranges become real versions, only `files` are kept; `npm pack`
//      would leave the `workspace:` ranges, so pnpm is the packer);
//   2. publint (exports, main/types/module files present and of the right format) and
//      @arethetypeswrong/cli (types resolve, no masquerading CJS/ESM, under node10, node16 from CJS
//      and from ESM, bundler) on each tarball; an ESM-only entry point (ESM_ONLY) is checked with
//      attw's `esm-only` profile, the package's other entry points with the strict default;
//   3. install all the tarballs, plus their peers (frameworks, ioredis, the optional test peers) and
//      the @types a consumer needs, with npm into a temporary directory outside the monorepo;
//   4. check each package.json for what the linters do not: `sideEffects: false`, `engines.node` >=
//      20, no `workspace:` left, frameworks and ioredis only as peers, @rl/core without runtime
//      dependencies and as a peer, ESM-only only where ESM_ONLY says why, the npm page's metadata
//      (description, keywords, license, repository with directory, homepage, bugs), LICENSE and the
//      README (when the package has one) in the tarball;
//   5. `require()` and `import()` every entry point (`@rl/core/testing` too) from plain Node: both
//      work, resolve to the CJS and ESM builds, and expose the same names;
//   6. a tiny limiter runs through the CJS and the ESM builds; `npx rl simulate` runs from the packed
//      @rl/cli (its JSON, its SVG and PNG charts and its HTML report);
//   7. `tsc --noEmit` type-checks the documented usage in an ESM consumer (.mts) and a CJS consumer
//      (.cts) (NodeNext).
//   8. each tarball within its size budget (SIZE_BUDGETS, packed and unpacked), with no source map,
//      no `sourceMappingURL` comment and no `src/` (tsup.base.ts: what a user debugs is the readable
//      build itself);
//   9. the local tarballs (`--pack-into`'s: siblings named by file, see localTarballs) install in one
//      command each into fresh projects, `npm install <dir>/*.tgz` and `pnpm add <dir>/*.tgz`, with one
//      copy of each package.
// Exits 1 with a list of failures. Usage: node scripts/pack-test.mjs [--only @rl/core,@rl/store-memory] [--keep] [--verbose]
//   [--pack-only <dir> | --tarballs <dir>] (pack into <dir> and stop; or test the tarballs <dir> holds)
//   A passing run prints one line; a failing one prints every step up to its failure, then the
//   failures; --verbose prints every step as it runs.
//   node scripts/pack-test.mjs --pack-into <dir>: only packs every publishable package into <dir> (the
//   root script `pnpm pack:all` packs into dist-packages/) for a local install in another project:
//   `npm install <dir>/*.tgz` or `pnpm add <dir>/*.tgz` (all the tarballs in one command).
// Environment: PNPM (command to run pnpm, default: pnpm on PATH, else `npx -y pnpm@<packageManager>`).

import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { checkLog } from './lib/check-log.mjs';
import { pnpmCommand, readJson, run, runAsync } from './lib/commands.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const keep = args.includes('--keep');
const onlyArg = args.indexOf('--only');
const only = onlyArg >= 0 ? new Set((args[onlyArg + 1] ?? '').split(',').filter(Boolean)) : undefined;
const packIntoArg = args.indexOf('--pack-into');
const packInto = packIntoArg >= 0 ? resolve(args[packIntoArg + 1] ?? 'dist-packages') : undefined;
// CI packs once, then tests those tarballs while the workspace's builds may be rewritten beside it
// (turbo replays its cache): --pack-only <dir> packs (the checks of step 8 included) and stops;
// --tarballs <dir> tests the tarballs found there instead of packing (steps 2-9).
const directoryAfter = (flag) => (args.indexOf(flag) >= 0 ? resolve(args[args.indexOf(flag) + 1]) : undefined);
const packOnly = directoryAfter('--pack-only');
const givenTarballs = directoryAfter('--tarballs');

const verbose = args.includes('--verbose');
// --pack-into's own output (the tarballs, how to install them) is what it is run for: never held.
const { failures, fail, ok, note, step, seconds: elapsed } = checkLog({ quiet: !verbose && packInto === undefined });
let work; // the temporary directory, removed by finish() unless --keep

/** Peers that must never be runtime dependencies of a package. */
const FRAMEWORKS = ['express', 'fastify', 'koa', 'ioredis'];
// The runtime dependencies of @rl/core, each justified in docs/design/architecture.md; the core has no others.
const CORE_DEPENDENCIES = ['eventemitter3', '@noble/hashes'];
/** Entry points that are ESM-only, and why: vitest, which the conformance suite registers its tests with, cannot be require()d. */
const ESM_ONLY = new Map([
  ['@rl/core/testing', 'it runs inside vitest, which is ESM-only'],
  ['@rl/cli', 'its chart library (Observable Plot, on d3) is ESM-only'],
]);
/** What the npm page of every package shows, and where its repository link points. */
const REPOSITORY = 'git+https://github.com/rl-js/rl.git';
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
  '@rl/core/http': [
    'HttpRateLimiter',
    'RateLimitResult',
    'Responder',
    'HeaderWriter',
    'holdRequest',
    'problemBody',
    'checkOptionNames',
  ],
  '@rl/core/store': [
    'ALGORITHM_KINDS',
    'checkCost',
    'decisionFromExact',
    'makeDecision',
    'checkOptions',
    'parseTimerDuration',
    'unrefTimer',
  ],
  '@rl/core/simulation': ['FakeTimers', 'BackendModel', 'runOverload', 'MinHeap'],
  '@rl/store-memory': ['MemoryStore'],
  '@rl/store-redis': ['RedisStore'],
  '@rl/store-cluster': ['ClusterStore', 'serveClusterStore', 'inProcessPair', 'processTransport'],
  '@rl/store-cluster/remote': [
    'Holder',
    'WireStore',
    'encode',
    'decode',
    'wireAlgorithm',
    'charged',
    'chargedEach',
    'holderError',
  ],
  '@rl/store-durable-object': ['DurableObjectStore', 'RateLimitObject', 'shardOf', 'hashTag'],
  '@rl/express': ['rateLimit'],
  '@rl/fastify': ['default'],
  '@rl/koa': ['rateLimit'],
  '@rl/prometheus': ['prometheusObserver', 'DEFAULT_DELAY_BUCKETS', 'DEFAULT_STORE_BUCKETS'],
  '@rl/opentelemetry': ['openTelemetryObserver', 'ATTRIBUTES', 'DEFAULT_DELAY_BOUNDARIES', 'DEFAULT_STORE_BOUNDARIES'],
  '@rl/cli': [
    'main',
    'simulate',
    'parsePattern',
    'patternTraffic',
    'parseLimit',
    'readTrafficFile',
    'formatReport',
    'renderChartSvg',
    'simulateClients',
  ],
  '@rl/client': [
    'createFetch',
    'nextStep',
    'serverWait',
    'PacingBook',
    'passWaiters',
    'partitionReports',
    'retryAfterMs',
    'RETRYABLE_STATUSES',
    'SAFE_METHODS',
  ],
};

/**
 * The most each tarball may weigh, in kB (1000 bytes): packed (the .tgz) and unpacked (its files).
 * Measured 2026-12-05 with no source maps and no src/ (see tsup.base.ts), plus about a quarter for
 * growth: a tarball past its budget has picked up something it should not ship (maps, sources, tests,
 * a bundled dependency), or grew enough for someone to decide so here. @rl/core measured 329.5 kB
 * packed, 1252 kB unpacked (with maps carrying every source, and src/: 911 kB and 3508 kB).
 * @rl/nestjs raised 2026-12-06 (30 → 36 packed, 112 → 135 unpacked): issue 38 gave it the storage
 * token, the guard's methods to override and their README sections (9.9 → 15.3 kB of README alone);
 * measured 31.9 kB packed, 122.3 kB unpacked. @rl/store-memory raised 2026-12-06 (22 → 28 packed, 86 →
 * 110 unpacked): issue 39 gave it the key index by scope (key-index.ts, its ESM and CJS builds);
 * measured 24.4 kB packed, 93.6 kB unpacked. @rl/client added 2026-12-06 (issue 40): measured 24.5 kB
 * packed, 82.0 kB unpacked. @rl/store-cluster set 2026-12-06 (issue 42): measured 28.1 kB packed,
 * 104.7 kB unpacked; raised the same day (36 → 42 packed, 135 → 170 unpacked): its runtime-neutral
 * `remote` entry (the holder and the wire, for @rl/store-durable-object) is a second build of them,
 * measured 34.0 kB packed, 138.6 kB unpacked. @rl/store-durable-object set 2026-12-06 (issue 42):
 * measured 10.4 kB packed, 51.2 kB unpacked. @rl/cli raised 2026-12-06 (34 → 42 packed, 104 → 135
 * unpacked): issue 40 part 2 gave it `--clients` (clients-source.ts, its figures and table) and the
 * README's "Retry storms"; measured 34.6 kB packed, 110.9 kB unpacked.
 * @rl/core raised 2026-12-06 (400 → 440 packed, 1550 → 1700 unpacked): issue 41 gave it adaptive
 * concurrency (adaptive/, the backend model and overload runs of testing/, the HTTP admission, five
 * instruments); measured 409.6 kB packed, 1541 kB unpacked (issue 41's `rl simulate --backend` fits
 * @rl/cli's budget).
 * @rl/opentelemetry raised 2026-12-07 (8 → 9 packed, 27 → 30 unpacked): one flush callback per meter
 * holding its exporters weakly, the adaptive latencies as Gauges, and the README's sections on the
 * names through OTel's Prometheus exporter and on per-limit outcomes; measured 7.7 kB packed, 28.3 kB
 * unpacked.
 */
const SIZE_BUDGETS = {
  '@rl/core': { packed: 440, unpacked: 1700 },
  '@rl/store-memory': { packed: 28, unpacked: 110 },
  '@rl/store-redis': { packed: 105, unpacked: 575 },
  '@rl/store-cluster': { packed: 42, unpacked: 170 },
  '@rl/store-durable-object': { packed: 14, unpacked: 65 },
  '@rl/express': { packed: 13, unpacked: 42 },
  '@rl/fastify': { packed: 17, unpacked: 68 },
  '@rl/koa': { packed: 9, unpacked: 30 },
  '@rl/hono': { packed: 13, unpacked: 61 },
  '@rl/nestjs': { packed: 36, unpacked: 135 },
  '@rl/prometheus': { packed: 10, unpacked: 36 },
  '@rl/opentelemetry': { packed: 9, unpacked: 30 },
  '@rl/cli': { packed: 42, unpacked: 135 },
  '@rl/client': { packed: 31, unpacked: 103 },
};

/** The files of a .tgz (ustar, as pnpm pack writes it): `{ name, size, body }` of each regular file. */
function tarballFiles(file) {
  const data = gunzipSync(readFileSync(file));
  const files = [];
  for (let offset = 0; offset + 512 <= data.length;) {
    const header = data.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const field = (start, end) =>
      header
        .subarray(start, end)
        .toString('utf8')
        .replace(/\0[\s\S]*$/, '');
    const size = parseInt(field(124, 136).trim() || '0', 8);
    const prefix = field(345, 500);
    const type = field(156, 157);
    if (type === '0' || type === '')
      files.push({
        name: (prefix ? `${prefix}/` : '') + field(0, 100),
        size,
        body: data.subarray(offset + 512, offset + 512 + size),
      });
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

/** Sizes of a tarball in bytes, and what it must not hold (see SIZE_BUDGETS). */
function tarballContents(file) {
  const files = tarballFiles(file);
  const unpacked = files.reduce((sum, f) => sum + f.size, 0);
  const maps = files.filter((f) => f.name.endsWith('.map')).map((f) => f.name);
  const sources = files.filter((f) => /^package\/src\//.test(f.name)).map((f) => f.name);
  const mapComments = files
    .filter((f) => /\.c?js$/.test(f.name) && f.body.includes('sourceMappingURL='))
    .map((f) => f.name);
  return { packed: readFileSync(file).length, unpacked, maps, sources, mapComments };
}

const kB = (bytes) => `${(bytes / 1000).toFixed(1)} kB`;

/**
 * Copies of the tarballs for a local install, in `into`: each packed package.json's dependencies on a
 * sibling (`@rl/express` on `@rl/store-memory@^0.1.0`) name the sibling's tarball by absolute path
 * (`file:/…/dist-packages/rl-store-memory-0.1.0.tgz`). The registry range is right for publishing, and
 * npm installs the tarballs together (the one given satisfies the range), but pnpm resolves a range of
 * a tarball's dependency in the registry only, never against the tarballs of the same command
 * (pnpm/pnpm#9391), and fails there with a 404 while nothing is published. A relative `file:` does
 * not help: pnpm reads it from the project, not from the tarball. Peers (`@rl/core`) keep their
 * ranges: both package managers take them from the project. These tarballs are for this machine
 * (moved elsewhere, the paths no longer hold: pack again there).
 */
/** `p`'s tarball among --tarballs' (as `pnpm pack` names it: `@rl/core@1.2.3` is `rl-core-1.2.3.tgz`). */
function givenTarball(p) {
  const file = join(givenTarballs, `${p.name.replace(/^@/, '').replace('/', '-')}-${p.source.version}.tgz`);
  const found = existsSync(file);
  return { p, result: { status: found ? 0 : 1, stdout: '', stderr: `no ${file}` }, created: found ? [file] : [] };
}

function localTarballs(packed, into) {
  const byName = new Map(packed.map((p) => [p.name, join(into, basename(p.tarball))]));
  const scratch = mkdtempSync(join(tmpdir(), 'rl-local-tarball-'));
  try {
    for (const p of packed) {
      const target = byName.get(p.name);
      const pkgFile = join(scratch, 'package', 'package.json');
      rmSync(join(scratch, 'package'), { recursive: true, force: true });
      const unpack = run('tar', ['-xzf', p.tarball, '-C', scratch]);
      if (unpack.status !== 0) throw new Error(`tar -xzf ${p.tarball}: ${unpack.stderr}`);
      const pkg = readJson(pkgFile);
      const siblings = Object.keys(pkg.dependencies ?? {}).filter((name) => byName.has(name));
      if (siblings.length === 0) {
        if (p.tarball !== target) cpSync(p.tarball, target);
        continue;
      }
      for (const name of siblings) pkg.dependencies[name] = `file:${byName.get(name)}`;
      writeFileSync(pkgFile, JSON.stringify(pkg, null, 2) + '\n');
      const repack = run('tar', ['-czf', target, '-C', scratch, 'package']);
      if (repack.status !== 0) throw new Error(`tar -czf ${target}: ${repack.stderr}`);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return [...byName.values()];
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
  if (!givenTarballs && !existsSync(join(root, 'packages', dir, 'dist'))) {
    fail(`${pkg.name}: packages/${dir}/dist is missing; run \`pnpm build\` first`);
    continue;
  }
  packages.push({ dir: join(root, 'packages', dir), name: pkg.name, source: pkg });
  ok(`${pkg.name}@${pkg.version} (packages/${dir})`);
}
if (packages.length === 0) fail('no publishable package found');
if (failures.length) finish();

if (packInto) {
  work = undefined;
} else {
  work = mkdtempSync(join(tmpdir(), 'rl-pack-test-'));
}
const tarballs = packInto ?? join(work, 'tarballs');
const app = work ? join(work, 'app') : undefined;
mkdirSync(tarballs, { recursive: true });
// --pack-into: the directory holds this build's tarballs only (a stale version would install too).
if (packInto) for (const file of readdirSync(tarballs)) if (file.endsWith('.tgz')) rmSync(join(tarballs, file));
if (app) mkdirSync(app);

{
  // -------------------------------------------------------------------------------------------------
  step(givenTarballs ? `the tarballs in ${givenTarballs}` : `pnpm pack into ${tarballs}`);
  const [pnpm, pnpmArgs] = pnpmCommand(root);
  const packed = await Promise.all(
    packages.map(async (p, i) => {
      if (givenTarballs) return givenTarball(p);
      const destination = join(tarballs, String(i));
      rmSync(destination, { recursive: true, force: true });
      mkdirSync(destination);
      const result = await runAsync(pnpm, [...pnpmArgs, 'pack', '--pack-destination', destination], { cwd: p.dir });
      return {
        p,
        result,
        created: readdirSync(destination)
          .filter((f) => f.endsWith('.tgz'))
          .map((f) => join(destination, f)),
      };
    }),
  );
  for (const { p, result, created } of packed) {
    if (result.status !== 0 || created.length !== 1) {
      fail(`${p.name}: pnpm pack failed (exit ${result.status})\n${result.stdout}${result.stderr}`);
      continue;
    }
    p.tarball = created[0];
    ok(`${p.name} -> ${created[0].slice(tarballs.length + 1)}`);
  }
  if (failures.length) finish();

  // -------------------------------------------------------------------------------------------------
  step('size and contents of each tarball (budgets: SIZE_BUDGETS)');
  for (const p of packages) {
    const c = tarballContents(p.tarball);
    const budget = SIZE_BUDGETS[p.name];
    const line = `${p.name}: ${kB(c.packed)} packed, ${kB(c.unpacked)} unpacked`;
    const problems = [];
    if (!budget) problems.push(`${line}; no budget in SIZE_BUDGETS (scripts/pack-test.mjs): add one`);
    else if (c.packed > budget.packed * 1000 || c.unpacked > budget.unpacked * 1000)
      problems.push(`${line}, over its budget of ${budget.packed} kB packed, ${budget.unpacked} kB unpacked`);
    if (c.maps.length)
      problems.push(
        `${p.name}: source maps in the tarball (${c.maps.slice(0, 3).join(', ')}${c.maps.length > 3 ? ', ...' : ''}); tsup.base.ts builds none`,
      );
    if (c.mapComments.length)
      problems.push(
        `${p.name}: a sourceMappingURL comment in ${c.mapComments.slice(0, 3).join(', ')} (a map the tarball does not hold)`,
      );
    if (c.sources.length)
      problems.push(`${p.name}: src/ in the tarball (${c.sources.length} files); "files" should list dist only`);
    // --pack-into packs for a local install: the problems are shown, the test run fails on them.
    for (const problem of problems) (packInto ? note : fail)(problem);
    if (!problems.length) ok(`${line} (budget ${budget.packed} / ${budget.unpacked} kB)`);
  }

  if (packOnly) {
    mkdirSync(packOnly, { recursive: true });
    for (const p of packages) cpSync(p.tarball, join(packOnly, basename(p.tarball)));
    finish();
  }

  if (packInto) {
    // One directory of tarballs, siblings named by file (see localTarballs), the per-package folders removed.
    const local = localTarballs(packages, tarballs);
    for (const p of packages) rmSync(dirname(p.tarball), { recursive: true, force: true });
    console.log(
      `\npacked ${packages.length} packages into ${tarballs}:\n${local.map((file) => `  ${file}`).join('\n')}`,
    );
    console.log(
      `\nInstall them in another project on this machine (all in one command; npm puts the peers they name where your code imports them):\n  npm install ${tarballs}/*.tgz\n  pnpm add ${tarballs}/*.tgz express   # pnpm: add every package your code imports (the framework, ioredis, …), or it cannot import it`,
    );
    process.exit(failures.length ? 1 : 0);
  }

  // -------------------------------------------------------------------------------------------------
  step('publint and attw on each tarball');
  const bin = (name) => join(root, 'node_modules', '.bin', name);
  const lints = [];
  for (const p of packages) {
    lints.push({
      p,
      what: 'publint --strict',
      command: [bin('publint'), 'run', p.tarball, '--strict', '--level', 'warning'],
    });
    // attw: the strict profile for the entry points that have both formats; an ESM-only entry point
    // (no `require` condition, on purpose: see ESM_ONLY) under the `esm-only` profile, which skips
    // the node10 and node16-from-CJS resolutions and checks the rest.
    const subpaths = Object.keys(p.source.exports ?? {}).filter((s) => s !== './package.json');
    const esmOnly = subpaths.filter((s) => ESM_ONLY.has(s === '.' ? p.name : `${p.name}/${s.slice(2)}`));
    const attw = [
      bin('attw'),
      p.tarball,
      '--no-definitely-typed',
      '--format',
      'ascii',
      '--no-color',
      '--no-emoji',
      '--no-summary',
    ];
    if (esmOnly.length < subpaths.length)
      lints.push({
        p,
        what: 'attw (strict)',
        command: [...attw, ...(esmOnly.length ? ['--exclude-entrypoints', ...esmOnly] : [])],
      });
    if (esmOnly.length)
      lints.push({
        p,
        what: `attw --profile esm-only (${esmOnly.join(', ')})`,
        command: [...attw, '--profile', 'esm-only', '--entrypoints', ...esmOnly],
      });
  }
  // Two at a time: the machine's other cores are someone else's.
  const results = [];
  for (let i = 0; i < lints.length; i += 2) {
    results.push(
      ...(await Promise.all(
        lints.slice(i, i + 2).map(({ command }) => runAsync(command[0], command.slice(1), { cwd: root })),
      )),
    );
  }
  for (const [i, { p, what }] of lints.entries()) {
    const result = results[i];
    if (result.status !== 0)
      fail(`${p.name}: ${what} failed (exit ${result.status})\n${result.stdout}${result.stderr}`);
    else ok(`${p.name}: ${what}`);
  }

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
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'rl-pack-consumer', version: '0.0.0', private: true }, null, 2),
  );
  const specs = [...packages.map((p) => p.tarball), ...[...wanted].map(([name, range]) => `${name}@${range}`)];
  note(`npm install ${specs.map((spec) => (spec.endsWith('.tgz') ? basename(spec) : spec)).join(' ')}`);
  const install = run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      '--prefer-offline',
      '--loglevel=error',
      '--no-package-lock',
      ...specs,
    ],
    {
      cwd: app,
      env: { ...process.env, npm_config_workspaces: 'false' },
    },
  );
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
    p.packed = pkg;
    const count = failures.length;
    const where = `${p.name} package.json`;
    if (pkg.sideEffects !== false)
      fail(`${where}: "sideEffects" is ${JSON.stringify(pkg.sideEffects)}, expected false`);
    const major = minimumMajor(pkg.engines?.node);
    if (major === undefined || major < 20)
      fail(`${where}: "engines.node" is ${JSON.stringify(pkg.engines?.node)}, expected >=20`);
    const text = JSON.stringify(pkg);
    if (text.includes('workspace:')) fail(`${where}: a "workspace:" range was left in the packed package.json`);
    const deps = pkg.dependencies ?? {};
    if (p.name === '@rl/core') {
      // The two runtime dependencies docs/design/architecture.md justifies; any other is a mistake.
      const extra = Object.keys(deps).filter((name) => !CORE_DEPENDENCIES.includes(name));
      if (extra.length > 0)
        fail(`${where}: @rl/core may depend only on ${CORE_DEPENDENCIES.join(' and ')}, has ${extra.join(', ')}`);
    }
    for (const name of FRAMEWORKS) {
      if (deps[name] || pkg.optionalDependencies?.[name])
        fail(`${where}: ${name} is a dependency; it must be a peer dependency`);
    }
    // A command (`bin`, such as @rl/cli's `rl`) is no part of an app: it brings its own core.
    if (deps['@rl/core'] && !pkg.bin)
      fail(`${where}: @rl/core must be a peer dependency (one copy of the core per app), not a dependency`);
    if (pkg.type !== 'module') fail(`${where}: "type" is ${JSON.stringify(pkg.type)}, expected "module"`);
    // The npm page: what the package is, where it lives, where to report a bug.
    const dir = `packages/${p.dir.slice(p.dir.lastIndexOf('/') + 1)}`;
    if (typeof pkg.description !== 'string' || pkg.description.length < 20) fail(`${where}: no "description"`);
    if (!Array.isArray(pkg.keywords) || pkg.keywords.length === 0) fail(`${where}: no "keywords"`);
    if (pkg.license !== 'MIT') fail(`${where}: "license" is ${JSON.stringify(pkg.license)}, expected "MIT"`);
    if (pkg.repository?.url !== REPOSITORY || pkg.repository?.directory !== dir)
      fail(
        `${where}: "repository" is ${JSON.stringify(pkg.repository)}, expected { url: "${REPOSITORY}", directory: "${dir}" }`,
      );
    if (typeof pkg.homepage !== 'string' || !pkg.homepage.startsWith('https://')) fail(`${where}: no "homepage"`);
    if (typeof pkg.bugs?.url !== 'string') fail(`${where}: no "bugs.url"`);
    if (!existsSync(join(base, 'LICENSE'))) fail(`${where}: LICENSE is not in the tarball`);
    // The README is the docs' job (a package without one is listed); packed when there is one.
    if (existsSync(join(p.dir, 'README.md')) && !existsSync(join(base, 'README.md')))
      fail(`${where}: README.md is not in the tarball`);
    if (!existsSync(join(p.dir, 'README.md'))) note(`${p.name} has no README.md`);
    if (!pkg.exports || typeof pkg.exports !== 'object') {
      fail(`${where}: no "exports" map`);
      continue;
    }
    // Which files the conditions point at, and that they exist, is publint's and attw's (above).
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (subpath === './package.json') continue;
      const specifier = subpath === '.' ? p.name : `${p.name}/${subpath.slice(2)}`;
      // An ESM-only entry point is allowed only where its own dependency is ESM-only (ESM_ONLY).
      const esmOnly = ESM_ONLY.has(specifier);
      if (esmOnly && target?.require)
        fail(`${specifier}: expected ESM-only (${ESM_ONLY.get(specifier)}), but it has a require condition`);
      if (!esmOnly && !target?.require)
        fail(`${specifier}: no require condition; an ESM-only entry point needs a reason in ESM_ONLY`);
      entries.push({
        pkg: p.name,
        subpath,
        specifier,
        cjs: target?.require?.default,
        esm: target?.import?.default,
        esmOnly,
      });
    }
    if (failures.length === count)
      ok(
        `${p.name}: sideEffects false, engines.node ${pkg.engines?.node}, deps ${JSON.stringify(Object.keys(deps))}, peers ${JSON.stringify(Object.keys(pkg.peerDependencies ?? {}))}`,
      );
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
    if (e.esmOnly) {
      if (!m || m.error) fail(`import('${e.specifier}') failed: ${m?.error ?? 'no result'}`);
      else if (!c?.error?.includes('ERR_PACKAGE_PATH_NOT_EXPORTED'))
        fail(
          `require('${e.specifier}') should fail with ERR_PACKAGE_PATH_NOT_EXPORTED (ESM-only), got ${c?.error ?? 'a module'}`,
        );
      else
        ok(
          `${e.specifier}: ESM-only (${ESM_ONLY.get(e.specifier)}); import loads ${m.names.length} names, require is refused cleanly`,
        );
      continue;
    }
    if (!c || c.error) fail(`require('${e.specifier}') failed: ${c?.error ?? 'no result'}`);
    if (!m || m.error) fail(`import('${e.specifier}') failed: ${m?.error ?? 'no result'}`);
    if (!c || c.error || !m || m.error) continue;
    if (!c.file.endsWith('.cjs')) fail(`require('${e.specifier}') resolved to ${c.file}, not a .cjs file`);
    if (!m.file.endsWith('.js') && !m.file.endsWith('.mjs'))
      fail(`import('${e.specifier}') resolved to ${m.file}, not an ESM file`);
    const onlyCjs = c.names.filter((n) => !m.names.includes(n) && n !== '__esModule');
    const onlyEsm = m.names.filter((n) => !c.names.includes(n));
    if (onlyCjs.length || onlyEsm.length) {
      fail(
        `${e.specifier}: CJS and ESM names differ (only CJS: ${onlyCjs.join(', ') || '-'}; only ESM: ${onlyEsm.join(', ') || '-'})`,
      );
    }
    const expected = EXPECTED_NAMES[e.specifier] ?? [];
    const missing = expected.filter((n) => !c.names.includes(n) || !m.names.includes(n));
    if (missing.length) fail(`${e.specifier}: missing exports ${missing.join(', ')}`);
    if (!onlyCjs.length && !onlyEsm.length && !missing.length)
      ok(
        `${e.specifier}: CJS and ESM both load, ${m.names.length} names (${m.names.slice(0, 6).join(', ')}${m.names.length > 6 ? ', ...' : ''})`,
      );
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
      // One copy of the core behind every entry point: an error thrown through @rl/core/store is the root's class.
      try {
        checkOptions({ nope: 1 }, [], 'probe');
        decisions.push('no error');
      } catch (error) {
        if (!(error instanceof InvalidOptionError)) decisions.push('a second copy of the core');
      }
      process.stdout.write(JSON.stringify(decisions));`;
    writeFileSync(
      join(app, 'smoke.cjs'),
      `(async () => {${body("const { createLimiter, tokenBucket, InvalidOptionError } = require('@rl/core'); const { checkOptions } = require('@rl/core/store'); const { MemoryStore } = require('@rl/store-memory');")}})().catch((e) => { console.error(e); process.exit(1); });`,
    );
    writeFileSync(
      join(app, 'smoke.mjs'),
      body(
        "import { createLimiter, tokenBucket, InvalidOptionError } from '@rl/core'; import { checkOptions } from '@rl/core/store'; import { MemoryStore } from '@rl/store-memory';",
      ),
    );
    for (const file of ['smoke.cjs', 'smoke.mjs']) {
      const result = run(process.execPath, [file], { cwd: app });
      if (result.status !== 0 || result.stdout !== '[true,true,false]')
        fail(
          `${file}: expected [true,true,false], got ${result.stdout || '-'} (exit ${result.status})\n${result.stderr}`,
        );
      else ok(`${file}: allowed, allowed, denied; one copy of the core behind @rl/core and @rl/core/store`);
    }
  }

  // -------------------------------------------------------------------------------------------------
  if (names.has('@rl/core') && names.has('@rl/prometheus')) {
    step('a Prometheus exporter on the peer prom-client, from CJS and from ESM');
    const body = (load) => `
      ${load}
      const registry = new Registry();
      const observer = prometheusObserver({ registry });
      observer.decision({ limit: 'api', outcome: 'allowed', reason: undefined, cost: 1, delayMs: 0, storeMs: 0.5, key: undefined });
      const text = await registry.metrics();
      process.stdout.write(JSON.stringify([text.includes('rl_decisions_total{limit="api",outcome="allowed"} 1'), text.includes('rl_store_duration_seconds_count{limit="api"} 1')]));`;
    writeFileSync(
      join(app, 'metrics.cjs'),
      `(async () => {${body("const { Registry } = require('prom-client'); const { prometheusObserver } = require('@rl/prometheus');")}})().catch((e) => { console.error(e); process.exit(1); });`,
    );
    writeFileSync(
      join(app, 'metrics.mjs'),
      body("import { Registry } from 'prom-client'; import { prometheusObserver } from '@rl/prometheus';"),
    );
    for (const file of ['metrics.cjs', 'metrics.mjs']) {
      const result = run(process.execPath, [file], { cwd: app });
      if (result.status !== 0 || result.stdout !== '[true,true]')
        fail(`${file}: expected [true,true], got ${result.stdout || '-'} (exit ${result.status})\n${result.stderr}`);
      else ok(`${file}: a decision scraped from registry.metrics()`);
    }
  }

  // -------------------------------------------------------------------------------------------------
  if (names.has('@rl/cli')) {
    step("npx rl simulate from the packed @rl/cli: the README's two batches, as JSON, a PNG and an SVG chart");
    const args = [
      '--no',
      'rl',
      'simulate',
      '--pattern',
      'burst 100 at 990ms, burst 100 at 1010ms',
      '--limit',
      'fixedWindow(limit=100,window=1s)',
      '--limit',
      'tokenBucket(capacity=20,refillRate=100)',
      '--json',
      '--chart',
      'chart.svg',
      '--chart',
      'chart.png',
      '--report',
      'report.html',
    ];
    const result = run('npx', args, { cwd: app });
    let admitted;
    try {
      admitted = JSON.parse(result.stdout).limits.map((l) => l.admitted);
    } catch {
      admitted = undefined;
    }
    const svg = existsSync(join(app, 'chart.svg')) ? readFileSync(join(app, 'chart.svg'), 'utf8') : '';
    const png = existsSync(join(app, 'chart.png')) ? readFileSync(join(app, 'chart.png')) : Buffer.alloc(0);
    if (result.status !== 0 || JSON.stringify(admitted) !== '[200,22]')
      fail(
        `npx rl simulate: expected admitted [200,22], got ${JSON.stringify(admitted)} (exit ${result.status})\n${result.stderr.slice(-2000)}`,
      );
    else if (!svg.startsWith('<svg') || png.subarray(1, 4).toString() !== 'PNG')
      fail(`npx rl simulate --chart: expected an SVG and a PNG file, got ${svg.length} and ${png.length} bytes`);
    else
      ok(
        `npx rl simulate: fixed window 200 admitted, token bucket 22; chart.svg ${svg.length} bytes, chart.png ${png.length} bytes`,
      );
    const html = existsSync(join(app, 'report.html')) ? readFileSync(join(app, 'report.html'), 'utf8') : '';
    if (
      !html.startsWith('<!doctype html>') ||
      !html.includes('<table id="rl-table">') ||
      html.match(/<svg /g)?.length !== 2
    )
      fail(`npx rl simulate --report: expected an HTML page with the table and 2 charts, got ${html.length} bytes`);
    else ok(`npx rl simulate --report: report.html ${html.length} bytes, the table and a chart per limit`);
    const usage = run(
      'npx',
      ['--no', 'rl', 'simulate', '--pattern', '600/x for 1s', '--limit', 'fixedWindow(limit=1,window=1s)'],
      { cwd: app },
    );
    if (usage.status !== 2 || !usage.stderr.includes('--pattern part 1'))
      fail(
        `npx rl simulate with a bad pattern: expected exit 2 naming "--pattern part 1", got exit ${usage.status}: ${usage.stderr}`,
      );
    else ok('npx rl simulate with a bad pattern: exit 2, the part named');
  }

  // -------------------------------------------------------------------------------------------------
  if (packages.length > 1) {
    step(
      'the local tarballs (pnpm pack:all): `npm install <dir>/*.tgz` and `pnpm add <dir>/*.tgz`, each in a fresh project',
    );
    const local = join(work, 'local');
    mkdirSync(local);
    const files = localTarballs(packages, local);
    const [pnpm, pnpmArgs] = pnpmCommand(root);
    const managers = [
      [
        'npm',
        'npm',
        ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline', '--loglevel=error', ...files],
      ],
      ['pnpm', pnpm, [...pnpmArgs, 'add', '--ignore-scripts', '--prefer-offline', ...files]],
    ];
    // One copy of each package: the store-memory an adapter loads is the project's own.
    const probe = `
      import { createRequire } from 'node:module';
      import { fileURLToPath } from 'node:url';
      import { realpathSync } from 'node:fs';
      import { createLimiter, tokenBucket } from '@rl/core';
      import { MemoryStore } from '@rl/store-memory';
      const limiter = createLimiter({ algorithm: tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' }), store: new MemoryStore({ sweepInterval: false }) });
      const decisions = [(await limiter.consume('k')).allowed, (await limiter.consume('k')).allowed];
      const own = realpathSync(fileURLToPath(import.meta.resolve('@rl/store-memory/package.json')));
      const adapters = ${JSON.stringify(packages.filter((p) => p.source.dependencies?.['@rl/store-memory']).map((p) => p.name))};
      const copies = adapters.filter((name) => realpathSync(createRequire(fileURLToPath(import.meta.resolve(name + '/package.json'))).resolve('@rl/store-memory/package.json')) !== own);
      process.stdout.write(JSON.stringify({ decisions, copies }));`;
    const installs = await Promise.all(
      managers.map(async ([label, command, commandArgs]) => {
        const project = join(work, `local-${label}`);
        mkdirSync(project);
        writeFileSync(
          join(project, 'package.json'),
          JSON.stringify({ name: `rl-local-${label}`, version: '0.0.0', private: true, type: 'module' }, null, 2),
        );
        writeFileSync(join(project, 'probe.mjs'), probe);
        const install = await runAsync(command, commandArgs, {
          cwd: project,
          env: { ...process.env, npm_config_workspaces: 'false' },
          timeoutMs: 300_000,
        });
        return { label, project, install };
      }),
    );
    for (const { label, project, install } of installs) {
      const shown = `${label} ${label === 'npm' ? 'install' : 'add'} ${local}/*.tgz`;
      if (install.status !== 0) {
        fail(`${shown} failed (exit ${install.status})\n${(install.stdout + install.stderr).slice(-3000)}`);
        continue;
      }
      const result = run(process.execPath, ['probe.mjs'], { cwd: project });
      const expected = JSON.stringify({ decisions: [true, false], copies: [] });
      if (result.status !== 0 || result.stdout !== expected)
        fail(
          `${shown}: expected ${expected} from a limiter and the adapters' store-memory, got ${result.stdout || '-'} (exit ${result.status})\n${result.stderr}`,
        );
      else ok(`${shown}: a limiter runs; one @rl/store-memory, the adapters' included`);
    }
  }

  // -------------------------------------------------------------------------------------------------
  step('tsc --noEmit of an ESM (.mts) and a CJS (.cts) consumer');
  const importsFor = (condition) =>
    entries
      .map((e, i) => (e.esmOnly && condition === 'require' ? '' : `import * as m${i} from '${e.specifier}';`))
      .filter(Boolean);
  const usesFor = (condition) =>
    `export const modules = [${entries
      .map((e, i) => (e.esmOnly && condition === 'require' ? '' : `m${i}`))
      .filter(Boolean)
      .join(', ')}];`;
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
  // The adapters' documented usage (type-checked only, never run).
  if (names.has('@rl/express') && names.has('@rl/core')) {
    typed += `
import express from 'express';
import { rateLimit as expressRateLimit } from '@rl/express';
import { fixedWindow as expressFixedWindow } from '@rl/core';
export const expressApp = express();
expressApp.use(expressRateLimit({ algorithm: expressFixedWindow({ limit: 100, window: '1m' }), cost: () => 5 }));
expressApp.get('/', (req, res) => { res.json({ remaining: req.rateLimit?.remaining }); });
`;
  }
  if (names.has('@rl/fastify') && names.has('@rl/core')) {
    typed += `
import Fastify from 'fastify';
import fastifyRateLimit from '@rl/fastify';
import { fixedWindow as fastifyFixedWindow } from '@rl/core';
export async function fastifyApp() {
  const app = Fastify();
  await app.register(fastifyRateLimit, { algorithm: fastifyFixedWindow({ limit: 100, window: '1m' }) });
  app.get('/export', { config: { rateLimit: { cost: 5 } } }, async (request) => ({ remaining: request.rateLimit?.remaining }));
  return app;
}
`;
  }
  if (names.has('@rl/koa') && names.has('@rl/core')) {
    typed += `
import Koa from 'koa';
import { rateLimit as koaRateLimit } from '@rl/koa';
import { slidingWindowLog as koaSlidingWindowLog } from '@rl/core';
export const koaApp = new Koa();
koaApp.use(koaRateLimit({ algorithm: koaSlidingWindowLog({ limit: 5, window: '1m' }) }));
`;
  }
  if (names.has('@rl/store-redis')) {
    typed += `
import { Redis } from 'ioredis';
import { RedisStore } from '@rl/store-redis';
export const redisStore = (url: string) => new RedisStore({ client: new Redis(url) });
`;
  }
  // The metrics exporters are observers (the `observer` option takes them).
  if (names.has('@rl/prometheus') && names.has('@rl/core')) {
    typed += `
import type { Observer as PrometheusObserverType } from '@rl/core';
import { Registry } from 'prom-client';
import { prometheusObserver } from '@rl/prometheus';
export const prometheus: PrometheusObserverType = prometheusObserver({ registry: new Registry(), prefix: 'rl_' });
`;
  }
  if (names.has('@rl/opentelemetry') && names.has('@rl/core')) {
    typed += `
import type { Observer as OpenTelemetryObserverType } from '@rl/core';
import { metrics } from '@opentelemetry/api';
import { openTelemetryObserver } from '@rl/opentelemetry';
export const openTelemetry: OpenTelemetryObserverType = openTelemetryObserver({ meter: metrics.getMeter('pack-test') });
`;
  }
  // Two programs: a .mts consumer (import conditions) and a .cts consumer (require conditions). One
  // program with both would see each global augmentation (Express.Request.rateLimit, ...) twice.
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const programs = [
    ['consumer.mts', 'import'],
    ['consumer.cts', 'require'],
  ];
  const checks = await Promise.all(
    programs.map(([file, condition]) => {
      writeFileSync(join(app, file), `${importsFor(condition).join('\n')}\n${typed}\n${usesFor(condition)}\n`);
      const config = `tsconfig.${condition}.json`;
      writeFileSync(
        join(app, config),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            lib: ['ES2022'],
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            esModuleInterop: true,
            noEmit: true,
            skipLibCheck: false,
            types: ['node'],
          },
          files: [file],
        }),
      );
      return runAsync(process.execPath, [tsc, '-p', config], { cwd: app });
    }),
  );
  for (const [i, [file, condition]] of programs.entries()) {
    const check = checks[i];
    // Errors in our declarations and in the consumer count; errors inside third-party typings
    // (an @types package out of step with its library) are listed but do not fail the run.
    const diagnostics = check.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
    const ours = diagnostics.filter(
      (line) => !line.startsWith('node_modules/') || line.startsWith('node_modules/@rl/'),
    );
    const theirs = diagnostics.filter((line) => !ours.includes(line));
    if (theirs.length)
      note(
        `${file}: ${theirs.length} error(s) in third-party typings, ignored:\n         ${theirs.join('\n         ')}`,
      );
    if (ours.length || (check.status !== 0 && diagnostics.length === 0)) {
      fail(
        `tsc ${file} (${condition}): ${ours.length ? `errors:\n${ours.join('\n')}` : `exit ${check.status}\n${check.stdout.slice(-2000)}${check.stderr}`}`,
      );
      continue;
    }
    ok(`${file} type-checks (${condition} conditions)`);
  }
}
finish();

function finish() {
  if (work && keep) console.log(`\nkept ${work}`);
  else if (work) rmSync(work, { recursive: true, force: true });
  const seconds = elapsed();
  if (failures.length) {
    console.error(`\npack-test: ${failures.length} failure(s) in ${seconds}s:`);
    for (const f of failures) console.error(`  - ${f.split('\n')[0]}`);
    process.exit(1);
  }
  console.log(`${verbose ? '\n' : ''}pack-test: all checks passed in ${seconds}s`);
  process.exit(0);
}

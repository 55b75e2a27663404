#!/usr/bin/env node
// Release-plan check: what `changeset version` would do, checked before anyone runs it.
//
// Computes the plan the way the changesets CLI does (@changesets/read, @changesets/config and
// @changesets/assemble-release-plan, the CLI's own libraries, with the repository's patch of the
// latter), for the changesets in .changeset/ and for scenarios (one patch, one minor, one major
// changeset on each published package alone), and fails when a plan:
//   - versions a private package (examples, bench, test-support): they are never released;
//   - takes a 0.x package to a major while no changeset of its fixed group asks for a major (a
//     core minor must not turn every peer-dependent into 1.0.0);
//   - gives the members of a fixed group different versions (the family moves together);
//   - leaves a published package outside every fixed group, or puts a private one in it.
// The core-minor scenario's plan is printed: it is what a user-visible core change releases.
// Exit 1 with the failures listed. Usage: node scripts/check-release-plan.mjs [--quiet]

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import assembleModule from '@changesets/assemble-release-plan';
import { read as readConfig } from '@changesets/config';
import readModule from '@changesets/read';
import { getPackages } from '@manypkg/get-packages';

// CJS packages with a `default` export: the function is `default` or the module itself.
const assembleReleasePlan = assembleModule.default ?? assembleModule;
const readChangesets = readModule.default ?? readModule;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const quiet = process.argv.includes('--quiet');
const failures = [];

const packages = await getPackages(root);
const config = await readConfig(root, packages);
const preFile = join(root, '.changeset', 'pre.json');
const preState = existsSync(preFile) ? JSON.parse(readFileSync(preFile, 'utf8')) : undefined;
const byName = new Map(packages.packages.map((p) => [p.packageJson.name, p.packageJson]));
const published = [...byName.values()].filter((pkg) => !pkg.private).map((pkg) => pkg.name);
const major = (version) => Number(version.split('.')[0]);

// The configuration itself: every published package in exactly one fixed group, no private one.
for (const name of published) {
  const groups = config.fixed.filter((group) => group.includes(name)).length;
  if (groups !== 1)
    failures.push(`config: ${name} is in ${groups} fixed groups, expected 1 (the family is released together)`);
}
for (const group of config.fixed) {
  for (const name of group)
    if (byName.get(name)?.private) failures.push(`config: the private package ${name} is in a fixed group`);
}
if (config.privatePackages.version !== false || config.privatePackages.tag !== false) {
  failures.push(
    `config: privatePackages is ${JSON.stringify(config.privatePackages)}, expected { version: false, tag: false }`,
  );
}

/** The failures of one plan, each prefixed with the plan's label. */
function checkPlan(label, changesets) {
  const plan = assembleReleasePlan(changesets, packages, config, preState);
  const found = [];
  const releases = new Map(plan.releases.map((r) => [r.name, r]));
  const groupOf = (name) => config.fixed.find((group) => group.includes(name)) ?? [name];
  const majorAsked = (name) => {
    const group = groupOf(name);
    return changesets.some((c) => c.releases.some((r) => r.type === 'major' && group.includes(r.name)));
  };
  for (const r of plan.releases) {
    const pkg = byName.get(r.name);
    if (pkg?.private && (r.type !== 'none' || r.newVersion !== r.oldVersion)) {
      found.push(
        `${label}: private package ${r.name} would be versioned ${r.oldVersion} -> ${r.newVersion} (${r.type})`,
      );
    }
    if (r.type === 'major' && major(r.oldVersion) === 0 && !majorAsked(r.name)) {
      found.push(
        `${label}: ${r.name} would go to a major (${r.oldVersion} -> ${r.newVersion}) while 0.x, and no changeset of its group asks for one`,
      );
    }
  }
  for (const group of config.fixed) {
    const versions = new Map(group.map((name) => [name, releases.get(name)?.newVersion ?? byName.get(name)?.version]));
    if (new Set(versions.values()).size > 1) {
      found.push(
        `${label}: the fixed group diverges: ${[...versions].map(([name, version]) => `${name}@${version}`).join(', ')}`,
      );
    }
  }
  return { plan, found };
}

const describePlan = (plan) =>
  plan.releases
    .filter((r) => r.type !== 'none')
    .map((r) => `    ${r.name.padEnd(20)} ${r.type.padEnd(5)} ${r.oldVersion} -> ${r.newVersion}`)
    .join('\n') || '    (nothing to release)';

const current = await readChangesets(root);
const actual = checkPlan(`.changeset/ (${current.length} changesets)`, current);
failures.push(...actual.found);
if (!quiet)
  console.log(`Release plan of the ${current.length} changesets in .changeset/:\n${describePlan(actual.plan)}`);

const scenario = (name, type) => [
  { id: `scenario-${name.replace(/\W/g, '-')}-${type}`, summary: `${type} of ${name}`, releases: [{ name, type }] },
];
for (const name of published) {
  for (const type of ['patch', 'minor', 'major']) {
    const { plan, found } = checkPlan(`a lone ${type} changeset of ${name}`, scenario(name, type));
    failures.push(...found);
    if (name === '@rl/core' && type === 'minor' && !quiet)
      console.log(`\nRelease plan of a lone minor changeset of @rl/core:\n${describePlan(plan)}`);
  }
}

if (failures.length) {
  console.error(`\ncheck-release-plan: ${failures.length} failure(s):`);
  for (const failure of failures) console.error(`  - ${failure}`);
  process.exit(1);
}
console.log(`\ncheck-release-plan: ok (the changesets of .changeset/ and ${published.length * 3} scenarios)`);

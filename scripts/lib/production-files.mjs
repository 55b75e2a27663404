// The production sources of the packages, as the structure test (scripts/structure.test.ts) and the
// formatted-size report (scripts/formatted-sizes.mjs) count them.
import { readdirSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';

/**
 * Production sources: `packages/*\/src/**\/*.ts`, absolute paths, sorted. Not tests (`.test.ts`),
 * declarations (`.d.ts`), generated modules (`.generated.ts`: their generator writes their layout),
 * nor the test kits: the private `@rl/test-support` and `@rl/core/testing` (`core/src/testing/`).
 */
export function productionFiles(packagesDir) {
  const files = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (isProduction(name)) files.push(path);
    }
  };
  for (const pkg of readdirSync(packagesDir)) {
    if (pkg === 'test-support') continue;
    const src = join(packagesDir, pkg, 'src');
    try {
      if (!statSync(src).isDirectory()) continue;
    } catch {
      continue; // a package without sources
    }
    walk(src);
  }
  const testKit = `${sep}${join('core', 'src', 'testing')}${sep}`;
  return files.filter((file) => !file.includes(testKit)).sort();
}

const isProduction = (name) =>
  name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts') && !name.endsWith('.generated.ts');

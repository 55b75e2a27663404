/**
 * `pnpm example` builds only the workspace packages the Express example imports (turbo `--only`,
 * each named by a `--filter`): the list in the root package.json must be the example's own `@rl/*`
 * dependencies, or the first command starts an app whose imports were never built.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const readJson = (path: string): { scripts?: Record<string, string>; dependencies?: Record<string, string> } =>
  JSON.parse(readFileSync(join(root, path), 'utf8'));

it("pnpm example builds exactly the Express example's workspace dependencies", () => {
  const script = readJson('package.json').scripts?.example ?? '';
  const built = [...script.matchAll(/--filter=(@rl\/[a-z-]+)(?=\s)/g)].map((m) => m[1]).sort();
  const imported = Object.keys(readJson('examples/express/package.json').dependencies ?? {})
    .filter((name) => name.startsWith('@rl/'))
    .sort();
  expect(imported.length).toBeGreaterThan(0);
  expect(built).toEqual(imported);
});

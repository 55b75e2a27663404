/**
 * docs/recipe-writing-a-store.md says its `MapStore` passes the conformance suite: this holds it to
 * that. The store's class is taken from the page's program as it stands, and the suite runs on it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Store } from '@rl/core';
import { expect, it } from 'vitest';
import { runStoreConformance } from '@rl/core/testing';

const page = readFileSync(
  join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'recipe-writing-a-store.md'),
  'utf8',
);
const program = /```ts\n(import \{ createLimiter[\s\S]*?)```/.exec(page)?.[1];
if (program === undefined) throw new Error('docs/recipe-writing-a-store.md has no program that imports createLimiter');
const storeClass = program.slice(
  program.indexOf('export class MapStore'),
  program.indexOf('const store = new MapStore();'),
);
const imports = program.split('\n').filter((line) => line.startsWith('import ') && line.includes("'@rl/core/store'"));
/** The page's class, imported from a file written for that in a folder removed once it is imported. */
async function importPageStore(): Promise<{ MapStore: new () => Store; folder: string }> {
  const folder = mkdtempSync(join(tmpdir(), 'rl-recipe-store-'));
  try {
    const file = join(folder, 'map-store.ts');
    writeFileSync(file, `${imports.join('\n')}\n${storeClass}`);
    const { MapStore } = (await import(/* @vite-ignore */ file)) as { MapStore: new () => Store };
    return { MapStore, folder };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
const { MapStore, folder } = await importPageStore();

runStoreConformance({ name: 'MapStore of docs/recipe-writing-a-store.md', createStore: () => new MapStore() });

it('leaves no temporary directory (the class was imported from it)', () => {
  expect(existsSync(folder)).toBe(false);
});

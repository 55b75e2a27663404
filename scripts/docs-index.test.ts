/**
 * docs/README.md is the index of the docs: it links every document under docs/ (the guides, the
 * errors, the migrations, the design pages), and every link it has leads to a file.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const docs = join(root, 'docs');
const index = readFileSync(join(docs, 'README.md'), 'utf8');
const links = [...index.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)]
  .map((m) => m[1]!)
  .filter((target) => !/^[a-z]+:/.test(target));

describe('docs/README.md, the index of the docs', () => {
  it('links every document under docs/ and docs/design/', () => {
    const documents = [
      ...readdirSync(docs).filter((f) => f.endsWith('.md') && f !== 'README.md'),
      ...readdirSync(join(docs, 'design'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `design/${f}`),
    ];
    expect(
      documents.filter((doc) => !links.includes(doc)),
      'add each to docs/README.md',
    ).toEqual([]);
  });

  it('every link leads to a file or a folder', () => {
    expect(links.length).toBeGreaterThan(10);
    expect(links.filter((target) => !existsSync(join(docs, target)))).toEqual([]);
  });

  it('the repository links it, CONTRIBUTING.md and SECURITY.md, from the root README', () => {
    for (const file of ['CONTRIBUTING.md', 'SECURITY.md']) expect(existsSync(join(root, file)), file).toBe(true);
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme).toContain('(docs/README.md)');
    expect(readme).toContain('(CONTRIBUTING.md)');
  });
});

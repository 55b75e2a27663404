/**
 * The structure the code keeps (DESIGN-NOTES "The code, one job per file"): production files of one
 * job (at most 300 lines; the limiter's facade at most 250), no import circle inside any package, no
 * long positional signatures in the composition engine and the HTTP layer, and no `@internal` member
 * on anything a package exports. Counted from the sources, with the TypeScript compiler's parser.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const packagesDir = join(root, 'packages');

/** Production sources: `packages/*\/src/**\/*.ts`, not tests, not the generated module, not the test kits. */
function productionFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts') && !name.endsWith('.generated.ts')) files.push(path);
    }
  };
  for (const pkg of readdirSync(packagesDir)) {
    // The test kits: @rl/test-support (private) and @rl/core/testing.
    if (pkg === 'test-support') continue;
    const src = join(packagesDir, pkg, 'src');
    try {
      walk(src);
    } catch {
      // A package without sources.
    }
  }
  return files.filter((file) => !file.includes(`${join('core', 'src', 'testing')}`));
}

const files = productionFiles();
const rel = (file: string): string => relative(packagesDir, file);
const parsed = new Map(files.map((file) => [file, ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)]));

describe('production sources', () => {
  it('has files of one job: none over 300 lines, the limiter facade at most 250', () => {
    const lines = (file: string): number => readFileSync(file, 'utf8').split('\n').length - 1;
    const over = files.filter((file) => lines(file) > 300).map((file) => `${rel(file)}: ${lines(file)}`);
    expect(over).toEqual([]);
    expect(lines(join(packagesDir, 'core', 'src', 'limiter', 'limiter.ts'))).toBeLessThanOrEqual(250);
  });

  it('has no import circle inside any package (type imports included)', () => {
    const edges = new Map<string, string[]>();
    for (const [file, source] of parsed) {
      const targets: string[] = [];
      for (const statement of source.statements) {
        const specifier = (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) ? statement.moduleSpecifier : undefined;
        if (specifier === undefined || !ts.isStringLiteral(specifier) || !specifier.text.startsWith('.')) continue;
        const target = resolve(dirname(file), specifier.text.replace(/\.js$/, '.ts'));
        if (parsed.has(target)) targets.push(target);
      }
      edges.set(file, targets);
    }
    // Tarjan's strongly connected components: a component of more than one file is a circle.
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const circles: string[][] = [];
    let next = 0;
    const visit = (file: string): void => {
      index.set(file, next);
      low.set(file, next++);
      stack.push(file);
      onStack.add(file);
      for (const target of edges.get(file) ?? []) {
        if (!index.has(target)) {
          visit(target);
          low.set(file, Math.min(low.get(file)!, low.get(target)!));
        } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
      if (low.get(file) !== index.get(file)) return;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(rel(member));
      } while (member !== file);
      if (component.length > 1 || (edges.get(file) ?? []).includes(file)) circles.push(component.sort());
    };
    for (const file of files) if (!index.has(file)) visit(file);
    expect(circles).toEqual([]);
  });

  it('takes at most 5 parameters in any function or constructor of the composition engine and the HTTP layer', () => {
    const long: string[] = [];
    for (const [file, source] of parsed) {
      if (!/core[\\/]src[\\/](compose|http)[\\/]/.test(file)) continue;
      const look = (node: ts.Node): void => {
        if (ts.isFunctionLike(node) && node.parameters.length > 5) {
          const { line } = source.getLineAndCharacterOfPosition(node.getStart());
          long.push(`${rel(file)}:${line + 1} (${node.parameters.length} parameters)`);
        }
        ts.forEachChild(node, look);
      };
      look(source);
    }
    expect(long).toEqual([]);
  });

  it('exports no class or type with an @internal member', () => {
    const internal = files.filter((file) => /@internal\b/.test(readFileSync(file, 'utf8'))).map(rel);
    expect(internal).toEqual([]);
  });

  it('gives a store one charge method: Store has charge, taking a Charge record (a maxDelayMs makes it a reservation), no reserve', () => {
    const store = readFileSync(join(packagesDir, 'core', 'src', 'store', 'interface.ts'), 'utf8');
    // A reservation and an idempotent charge are fields of the same record (`Charge`), not verbs of their own.
    expect(store).toMatch(/\n {2}charge\(charge: Charge, now: number \| undefined\): MaybePromise<Charged>;/);
    expect(store).toMatch(/\n {2}readonly maxDelayMs\?: number;[\s\S]*\n {2}readonly idempotency\?: IdempotentCharge;/);
    expect(store).not.toMatch(/\n {2}reserve\??\(/);
  });
});

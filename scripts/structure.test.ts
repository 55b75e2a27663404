/**
 * The structure the code keeps (DESIGN-NOTES "The code, one job per file"), measured on the design, not
 * on the layout (docs/design/testing.md, "Structure tests"). In the production sources of every
 * package: no exported signature past 4 positional parameters, no module-level `let` or `var`, no
 * module-level `WeakMap`/`WeakSet` but the side tables listed here (none keyed by a decision or a
 * charge), no import circle inside a package, no `@internal` member on anything exported. The rules
 * (scripts/lib/structure-rules.ts) read the sources parsed by the TypeScript compiler, so no layout
 * changes a count; each is first tried on a few lines it must flag and a few it must pass, so that it
 * cannot pass by finding nothing. File sizes are no test: scripts/formatted-sizes.mjs lists them.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a JavaScript module of the scripts, without declarations
import { productionFiles } from './lib/production-files.mjs';
import {
  hasInternalTag,
  importCircles,
  moduleVariables,
  moduleWeakCollections,
  nameText,
  parse,
  relativeImports,
  unlistedSideTables,
  wideSignatures,
  type Finding,
  type SideTable,
} from './lib/structure-rules.js';

/** Past this many positional parameters, an exported signature takes an options record. */
const MAX_POSITIONAL = 4;

/** The module-level `WeakMap`s and `WeakSet`s allowed, each with its reason (see `SideTableReason`). */
const SIDE_TABLES: readonly SideTable[] = [
  {
    file: 'core/src/algorithms/block.ts',
    name: 'derived',
    reason: 'a cache keyed by an object the user owns',
    why: "an algorithm's lockout copies, derived once per algorithm object and block",
  },
  {
    file: 'core/src/algorithms/override.ts',
    name: 'derived',
    reason: 'a cache keyed by an object the user owns',
    why: "an algorithm's copy that checks overrides, derived once per algorithm object",
  },
  {
    file: 'core/src/limiter/deny-cache.ts',
    name: 'configurations',
    reason: 'a cache keyed by an object the user owns',
    why: "an algorithm's configuration string, made once per algorithm object",
  },
  {
    file: 'core/src/observe/observation.ts',
    name: 'warned',
    reason: 'a cache keyed by an object the user owns',
    why: 'the observers whose throw was reported already (once per observer, process-wide)',
  },
  {
    file: 'express/src/request-result.ts',
    name: 'results',
    reason: 'a per-request association keyed by an object the user owns',
    why: "a request's `req.rateLimit`, behind an accessor on Express's request prototype",
  },
  {
    file: 'express/src/request-result.ts',
    name: 'accessorPrototypes',
    reason: 'a cache keyed by an object the user owns',
    why: "the apps' request prototypes known to carry the `rateLimit` accessor",
  },
  {
    file: 'core/src/limiter/core-registry.ts',
    name: 'cores',
    reason: 'an association keyed by an object the user owns',
    why: "the core beneath each `Limiter` the user holds: the engine's way in, where a public member would be an `@internal` one",
  },
  {
    file: 'opentelemetry/src/observer.ts',
    name: 'flushersByMeter',
    reason: 'an association keyed by an object the user owns',
    why: "the exporters batching into the user's OpenTelemetry meter, each held weakly, flushed by the one batch callback the meter gets",
  },
  {
    file: 'prometheus/src/collected-sink.ts',
    name: 'flushersByMetric',
    reason: 'an association keyed by an object the user owns',
    why: "the exporters flushing into a metric of the user's prom-client registry, each held weakly, read by the one collect hook the metric gets",
  },
  {
    file: 'hono/src/fetch-handler.ts',
    name: 'runtimeArguments',
    reason: 'a per-request association keyed by an object the user owns',
    why: 'the arguments a runtime passed beside a `Request` in flight (its client address is read there)',
  },
  {
    file: 'hono/src/fetch-handler.ts',
    name: 'results',
    reason: 'a per-request association keyed by an object the user owns',
    why: "a `Request`'s rate-limit result, for `rateLimitOf(request)`",
  },
];

const packagesDir = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'packages');
const files: string[] = productionFiles(packagesDir);
/** A path under packages/, with `/` on every platform (the allow-list's form). */
const rel = (file: string): string => relative(packagesDir, file).split(sep).join('/');
const parsed = new Map(files.map((file) => [file, parse(readFileSync(file, 'utf8'), file)]));
/** `file:line what` for each finding of `rule` in the production sources. */
const everywhere = (rule: (source: ts.SourceFile, file: string) => Finding[]): string[] =>
  [...parsed].flatMap(([file, source]) =>
    rule(source, rel(file)).map((finding) => `${rel(file)}:${finding.line} ${finding.what}`),
  );

describe('the rules, on a few lines each', () => {
  it('flags an exported signature past 4 positional parameters, wherever it is declared', () => {
    const flagged = parse(`
      export function f(a: number, b: number, c: number, d: number, ...rest: number[]) {}
      export const g = (a: number, b: number, c: number, d: number, e?: number) => a;
      export class C {
        constructor(a: number, b: number, c: number, d: number, e: number) {}
        m(a: number, b: number, c: number, d: number, e: number): void {}
      }
      export interface I {
        m(a: string, b: string, c: string, d: string, e: string): void;
        p: (a: string, b: string, c: string, d: string, e: string) => void;
        on(listener: (a: string, b: string, c: string, d: string, e: string) => void): void;
      }
      export type T = (a: string, b: string, c: string, d: string, e: string) => void;
      function h(a: number, b: number, c: number, d: number, e: number) {}
      export { h };
    `);
    expect(wideSignatures(flagged, MAX_POSITIONAL).map((finding) => finding.what)).toEqual([
      'f (5 parameters)',
      'g (5 parameters)',
      'C.constructor (5 parameters)',
      'C.m (5 parameters)',
      'I.m (5 parameters)',
      'I.p (5 parameters)',
      'I.on.listener (5 parameters)',
      'T (5 parameters)',
      'h (5 parameters)',
    ]);
    const passed = parse(`
      export function f(this: void, a: number, b: number, c: number, d?: number) {}
      export function g(options: { a: number; b: number; c: number; d: number; e: number }) {}
      export class C {
        private p(a: number, b: number, c: number, d: number, e: number): void {}
        #q(a: number, b: number, c: number, d: number, e: number): void {}
      }
      function local(a: number, b: number, c: number, d: number, e: number) {}
      export function outer() {
        return (a: number, b: number, c: number, d: number, e: number) => a + b + c + d + e;
      }
      interface Unexported {
        m(a: string, b: string, c: string, d: string, e: string): void;
      }
    `);
    expect(wideSignatures(passed, MAX_POSITIONAL)).toEqual([]);
  });

  it('flags a module-level let or var, not a const nor a let inside a function', () => {
    const flagged = parse(`let a = 0;\nexport var b: string | undefined;\nlet c, d;\n`);
    expect(moduleVariables(flagged)).toEqual([
      { line: 1, what: 'let a' },
      { line: 2, what: 'var b' },
      { line: 3, what: 'let c' },
      { line: 3, what: 'let d' },
    ]);
    const passed = parse(
      `const a = 0;\nexport function f() {\n  let b = 0;\n  return ++b;\n}\nclass C {\n  count = 0;\n}\n`,
    );
    expect(moduleVariables(passed)).toEqual([]);
  });

  it('flags a module-level WeakMap or WeakSet not allowed, and one keyed by a decision even when allowed', () => {
    const allowed: SideTable[] = [
      { file: 'x.ts', name: 'derived', reason: 'a cache keyed by an object the user owns', why: 'per algorithm' },
      { file: 'x.ts', name: 'marks', reason: 'a cache keyed by an object the user owns', why: 'wrongly allowed' },
    ];
    const flagged = parse(`
      const settled = new WeakSet<Decision>();
      const marks = new WeakMap<Decision, string>();
      const origins: WeakMap<Charge, Decision> = new WeakMap();
      export class Registry {
        static readonly cores = new WeakMap<object, object>();
      }
      const derived = new WeakMap<Algorithm, Algorithm>();
    `);
    expect(unlistedSideTables(flagged, 'x.ts', allowed).map((finding) => finding.what)).toEqual([
      'WeakSet settled keyed by Decision',
      'WeakMap marks keyed by Decision',
      'WeakMap origins keyed by Charge',
      'WeakMap Registry.cores keyed by object',
    ]);
    expect(unlistedSideTables(flagged, 'y.ts', allowed).map((finding) => finding.what)).toContain(
      'WeakMap derived keyed by Algorithm',
    );
    const passed = parse(`
      const derived = new WeakMap<Algorithm, Algorithm>();
      export class Guard {
        private readonly pending = new WeakMap<Decision, () => void>();
      }
      export function once() {
        const seen = new WeakSet<object>();
        return seen;
      }
    `);
    expect(unlistedSideTables(passed, 'x.ts', allowed)).toEqual([]);
  });

  it('finds an import circle, a file importing itself included, and no circle in a chain', () => {
    expect(
      importCircles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
          ['d', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
    expect(importCircles(new Map([['a', ['a']]]))).toEqual([['a']]);
    expect(
      importCircles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', []],
        ]),
      ),
    ).toEqual([]);
    expect(
      relativeImports(
        parse(`import type { A } from './a.js';\nexport { b } from '../b.js';\nimport ts from 'typescript';\n`),
      ),
    ).toEqual(['./a.js', '../b.js']);
  });

  it('finds an @internal tag', () => {
    expect(hasInternalTag('/** @internal */\nexport const a = 1;')).toBe(true);
    expect(hasInternalTag('/** internal use */\nexport const a = 1;')).toBe(false);
  });
});

describe('production sources', () => {
  it('reads the production sources of every package', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(new Set(files.map((file) => rel(file).split('/')[0]))).toContain('store-redis');
  });

  it(`has no exported function, method, constructor or interface member past ${MAX_POSITIONAL} positional parameters`, () => {
    expect(everywhere((source) => wideSignatures(source, MAX_POSITIONAL))).toEqual([]);
  });

  it('has no module-level let or var', () => {
    expect(everywhere(moduleVariables)).toEqual([]);
  });

  it('has a module-level WeakMap or WeakSet only where listed, none keyed by a decision or a charge', () => {
    expect(everywhere((source, file) => unlistedSideTables(source, file, SIDE_TABLES))).toEqual([]);
  });

  it('lists only side tables that exist, each once', () => {
    const existing = new Set(
      [...parsed].flatMap(([file, source]) =>
        moduleWeakCollections(source).map((table) => `${rel(file)} ${table.name}`),
      ),
    );
    const listed = SIDE_TABLES.map((entry) => `${entry.file} ${entry.name}`);
    expect(listed.filter((entry) => !existing.has(entry))).toEqual([]);
    expect(new Set(listed).size).toBe(listed.length);
  });

  it('has no import circle inside any package (type imports included)', () => {
    const edges = new Map<string, string[]>();
    for (const [file, source] of parsed) {
      const targets = relativeImports(source).map((specifier) =>
        resolve(dirname(file), specifier.replace(/\.js$/, '.ts')),
      );
      edges.set(rel(file), targets.filter((target) => parsed.has(target)).map(rel));
    }
    expect(importCircles(edges)).toEqual([]);
  });

  it('exports no class or type with an @internal member', () => {
    const internal = files.filter((file) => hasInternalTag(readFileSync(file, 'utf8'))).map(rel);
    expect(internal).toEqual([]);
  });

  it('gives a store one charge method, of a record: Store.charge(charge, now) (a maxDelayMs makes it a reservation), no consume, no reserve', () => {
    const source = parsed.get(join(packagesDir, 'core', 'src', 'store', 'interface.ts'))!;
    const store = source.statements.find(
      (statement): statement is ts.InterfaceDeclaration =>
        ts.isInterfaceDeclaration(statement) && statement.name.text === 'Store',
    )!;
    const members = (name: string): ts.TypeElement[] =>
      store.members.filter((member) => nameText(member.name, source) === name);
    // An idempotent charge, a reservation, a dry-run limit's charge: fields of the one record, not verbs of their own.
    const charge = members('charge');
    expect(charge).toHaveLength(1);
    const parameters = (charge[0] as ts.MethodSignature).parameters.map((parameter) =>
      parameter.getText(source).replace(/\s+/g, ' '),
    );
    expect(parameters).toEqual(['charge: Charge', 'now: number | undefined']);
    expect([members('consume'), members('undo'), members('group')]).toEqual([[], [], []]);
    expect(members('reserve')).toEqual([]);
  });
});

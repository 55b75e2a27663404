// A Node module loader for tests' child processes (the Redis contention workers): runs the workspace's
// TypeScript sources directly, resolving the @rl/* packages to their src with the same aliases as the
// root vitest.config.ts (workspace-aliases.mjs).
// Types are stripped by the oxc transform that vitest already installs (rolldown, found through
// vitest -> vite; it loads far faster than the compiler), or by the TypeScript compiler when that is
// not found. No extra dependencies.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { workspaceEntryPoints } from './workspace-aliases.mjs';

async function loadStripTypes() {
  try {
    const fromVitest = createRequire(createRequire(import.meta.url).resolve('vitest/package.json'));
    const fromVite = createRequire(fromVitest.resolve('vite'));
    const { transformSync } = await import(fromVite.resolve('rolldown/experimental'));
    return (path, source) => {
      const result = transformSync(path, source, {});
      if (result.errors?.length) throw new Error(`${path}: ${result.errors.map((e) => e.message).join('; ')}`);
      return result.code;
    };
  } catch {
    const ts = (await import('typescript')).default;
    return (path, source) =>
      ts.transpileModule(source, {
        fileName: path,
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false },
      }).outputText;
  }
}

const stripTypes = await loadStripTypes();

const ALIASES = new Map(workspaceEntryPoints().map(({ specifier, source }) => [specifier, pathToFileURL(source).href]));

export async function resolve(specifier, context, nextResolve) {
  const alias = ALIASES.get(specifier);
  if (alias) return { url: alias, shortCircuit: true };
  if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
    const url = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
    if (existsSync(url)) return { url: url.href, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.endsWith('.ts')) return nextLoad(url, context);
  const path = fileURLToPath(url);
  return { format: 'module', source: stripTypes(path, await readFile(path, 'utf8')), shortCircuit: true };
}

// @rl/test-support's loader (ts-loader.mjs) resolves the workspace's TypeScript sources; its transform
// strips types only, and Nest's decorators are TypeScript's legacy ones (no runtime runs them): this
// loader compiles them with the TypeScript compiler instead.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export { resolve } from '../../../test-support/ts-loader.mjs';

export async function load(url, context, nextLoad) {
  if (!url.endsWith('.ts')) return nextLoad(url, context);
  const path = fileURLToPath(url);
  const { outputText } = ts.transpileModule(await readFile(path, 'utf8'), {
    fileName: path,
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      experimentalDecorators: true,
      sourceMap: false,
    },
  });
  return { format: 'module', source: outputText, shortCircuit: true };
}

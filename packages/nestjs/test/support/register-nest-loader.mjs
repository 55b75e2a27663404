// `fork(worker.ts, [], { execArgv: ['--import', <this file>] })`: @rl/test-support's TypeScript loader
// (the workspace's sources, @rl/* resolved as vitest does), with Nest's legacy decorators compiled.
import { register } from 'node:module';

register('./nest-loader.mjs', import.meta.url);

// The module's tests (suites/module.ts) on Nest 12, the devDependencies' @nestjs/*; module.nest11.test.ts runs them on Nest 11.
import { expectNest } from './support/nest-app.js';
import './suites/module.js';

expectNest(12);

// The collection of the requests the guard never lets proceed (suites/dropped-requests.ts) on Nest 12; dropped-requests.nest11.test.ts on Nest 11.
import { expectNest } from './support/nest-app.js';
import './suites/dropped-requests.js';

expectNest(12);

import { describeServerProcess } from '../../test-support/server-process.js';

// `src/server.ts` in a child process: a 429 with the RateLimit headers, then a clean exit on SIGTERM
// (memory store, then Redis). The test lives in examples/test-support/, shared by every example.
describeServerProcess(new URL('..', import.meta.url));

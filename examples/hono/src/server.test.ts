import { describeServerProcess } from '@rl/test-support';

// `src/server.ts` in a child process: a 429 with the RateLimit headers, then a clean exit on SIGTERM
// (memory store, then Redis). The test is describeServerProcess in @rl/test-support, shared by every example.
describeServerProcess(new URL('..', import.meta.url));

/**
 * A script of socket-exit.test.ts: one call through a `ClusterStore` on the socket named in argv[2],
 * then nothing: no timer, no server, no other handle. It prints the decision's `remaining`, which it
 * can only do if the store kept the process alive while the call waited for the holder's answer.
 */
import { fixedWindow } from '@rl/core';
import { ClusterStore } from '../../src/index.js';

const store = new ClusterStore({ socket: process.argv[2]! });
const decision = await store.peek('k', fixedWindow({ limit: 5, window: '1h' }), 0, undefined);
process.stdout.write(`${decision.remaining}\n`);
store.close();

import { describe, expect, it } from 'vitest';
import { glideServerReply } from './glide.js';

// GLIDE's messages as GLIDE 2 gives them for a server's error replies (each read from a real Redis 7:
// `customCommand` of a command or of `EVAL "return redis.error_reply('…')"`), and the reply Redis wrote.
describe('glideServerReply', () => {
  it.each([
    [
      'WRONGTYPE: Operation against a key holding the wrong kind of value',
      'WRONGTYPE Operation against a key holding the wrong kind of value',
    ],
    ['An error was signalled by the server: - ResponseError: rl: bad input', 'ERR rl: bad input'],
    ['An error was signalled by the server: - TryAgain: x', 'TRYAGAIN x'],
    ['An error was signalled by the server: - Moved: 1 x:1', 'MOVED 1 x:1'],
    ['An error was signalled by the server: - Ask: 1 x:1', 'ASK 1 x:1'],
    [
      'An error was signalled by the server: - NoScriptError: No matching script. Please use EVAL.',
      'NOSCRIPT No matching script. Please use EVAL.',
    ],
    // A kind this adapter does not know, and errors that are no reply: their message as it is.
    [
      'An error was signalled by the server: - SomethingNew: x',
      'An error was signalled by the server: - SomethingNew: x',
    ],
    ['Connection closed', 'Connection closed'],
  ])('%s → %s', (message, reply) => {
    expect(glideServerReply(new Error(message))).toBe(reply);
  });
});

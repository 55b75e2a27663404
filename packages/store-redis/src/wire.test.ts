import { describe, expect, it } from 'vitest';
import { UnsupportedError } from '@rl/core/store';
import { CALLS, callOf, callTables, configurationStart, isIdempotent, keysOf, operationOf, widthOf } from './wire.js';

// The wire table: every call derived from the operations, idempotency a property of a call's values.

describe('the calls of the wire table', () => {
  it('every operation, and for a consume, a reservation and an undo the same operation with an idempotent charge: the widths the scripts read', () => {
    expect(Object.fromEntries(CALLS.map((call) => [call, widthOf(call)]))).toEqual({
      c: 2,
      'c+': 12,
      v: 3,
      'v+': 12,
      p: 2,
      u: 5,
      'u+': 8,
      s: 7,
      a: 2,
      r: 2,
    });
    expect(CALLS.map((call) => [call, operationOf(call), isIdempotent(call)])).toContainEqual(['u+', 'u', true]);
  });

  it('a call is idempotent when its values carry an id (the 8th argument), whatever else they hold', () => {
    expect(callOf('c', ['2', '5'])).toBe('c');
    expect(callOf('c', ['2', '5', undefined, undefined, undefined, undefined, undefined, 'id'])).toBe('c+');
    expect(callOf('v', ['2', '5', '0'])).toBe('v');
    expect(callOf('u', [undefined, undefined, undefined, '100', undefined, undefined, undefined, 'id'])).toBe('u+');
    // An operation that takes no idempotent charge refuses one.
    expect(() => callOf('p', ['1', '5', undefined, undefined, undefined, undefined, undefined, 'id'])).toThrow(
      UnsupportedError,
    );
  });

  it('an idempotent call on a state with keys of its own sends one key more; the compact layout none', () => {
    expect([keysOf(2, false, 'c'), keysOf(2, false, 'c+'), keysOf(2, false, 'u+'), keysOf(1, true, 'c+')]).toEqual([
      2, 3, 3, 1,
    ]);
  });

  it('a configuration sent by argument follows the call\u2019s own arguments', () => {
    expect([configurationStart(true, 'c'), configurationStart(true, 'c+'), configurationStart(false, 'u+')]).toEqual([
      4, 14, 9,
    ]);
  });

  it('the tables a batch or group script reads: each call\u2019s width, and the operation of each idempotent call', () => {
    expect(callTables(['c', 'c+', 'v'])).toBe(
      "local WIDTH = { c = 2, ['c+'] = 12, v = 3 }\nlocal IDEMPOTENT_OP = { ['c+'] = 'c' }\n",
    );
  });
});

import { describe, expect, it } from 'vitest';
import { idempotencyKeyFrom } from './idempotency-key.js';

describe('idempotencyKeyFrom', () => {
  it.each([
    ['"8e03978e-40d5-43e8-bc93-6894a57f9324"', '8e03978e-40d5-43e8-bc93-6894a57f9324'],
    ['8e03978e-40d5-43e8-bc93-6894a57f9324', '8e03978e-40d5-43e8-bc93-6894a57f9324'],
    ['  "a \\"b\\" \\\\c"  ', 'a "b" \\c'],
    ['""', undefined],
    ['   ', undefined],
    [undefined, undefined],
  ])('reads %j as %j', (header, key) => {
    expect(idempotencyKeyFrom(header === undefined ? {} : { 'idempotency-key': header })).toBe(key);
  });

  it('takes no key from several headers (the draft allows one), as Node joins them or not, nor from one too long to be a key', () => {
    expect(idempotencyKeyFrom({ 'idempotency-key': ['a', 'b'] as unknown as string })).toBeUndefined();
    expect(idempotencyKeyFrom({ 'idempotency-key': '"a", "b"' })).toBeUndefined();
    expect(idempotencyKeyFrom({ 'idempotency-key': 'a, b' })).toBeUndefined();
    expect(idempotencyKeyFrom({ 'idempotency-key': String.raw`"a\\"` })).toBe('a\\');
    expect(idempotencyKeyFrom({ 'idempotency-key': 'x'.repeat(513) })).toBeUndefined();
    expect(idempotencyKeyFrom({ 'idempotency-key': 'x'.repeat(512) })).toBe('x'.repeat(512));
  });
});

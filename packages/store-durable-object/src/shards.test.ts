import { describe, expect, it } from 'vitest';
import { hashTag, shardOf } from './shards.js';

describe('which object decides a key', () => {
  it.each([
    ['rl:minute:203.0.113.7', 'rl:minute:203.0.113.7'],
    ['rl:minute:{203.0.113.7}', '203.0.113.7'],
    ['rl:{a}:{b}', 'a'],
    ['rl:{}:x', 'rl:{}:x'],
    ['rl:{open', 'rl:{open'],
  ])('%s is placed by %s', (key, tag) => {
    expect(hashTag(key)).toBe(tag);
  });

  it('keys of one hash tag share an object; one shard holds every key', () => {
    expect(shardOf('rl:minute:{c1}', 16)).toBe(shardOf('rl:hour:{c1}', 16));
    expect(shardOf('anything', 1)).toBe(0);
  });

  it('spreads keys over every object, within a tenth of the mean', () => {
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 8_000; i++) counts[shardOf(`rl:{client-${i}}`, 8)]!++;
    for (const count of counts) expect(Math.abs(count - 1_000)).toBeLessThan(100);
  });
});

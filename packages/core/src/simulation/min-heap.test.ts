import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { MinHeap } from './min-heap.js';

describe('MinHeap', () => {
  test('empty: peek and pop are undefined, size 0', () => {
    const heap = new MinHeap<number>((a, b) => a < b);
    expect([heap.peek(), heap.pop(), heap.size]).toEqual([undefined, undefined, 0]);
  });

  test('pops in order, ties by a sequence number, whatever the order pushed (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 200 }), (times) => {
        const heap = new MinHeap<{ at: number; seq: number }>(
          (a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq),
        );
        times.forEach((at, seq) => heap.push({ at, seq }));
        const out: { at: number; seq: number }[] = [];
        for (let e = heap.pop(); e !== undefined; e = heap.pop()) out.push(e);
        const sorted = times.map((at, seq) => ({ at, seq })).sort((a, b) => a.at - b.at || a.seq - b.seq);
        expect(out).toEqual(sorted);
      }),
    );
  });

  test('push after pops keeps the order; peek leaves the first in', () => {
    const heap = new MinHeap<number>((a, b) => a < b);
    for (const n of [5, 1, 4]) heap.push(n);
    expect(heap.pop()).toBe(1);
    heap.push(0);
    heap.push(9);
    expect(heap.peek()).toBe(0);
    expect([heap.pop(), heap.pop(), heap.pop(), heap.pop(), heap.size]).toEqual([0, 4, 5, 9, 0]);
  });
});

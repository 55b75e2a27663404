import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from '../errors.js';
import {
  checkBoundaries,
  DEFAULT_DELAY_BOUNDARIES,
  DEFAULT_STORE_BOUNDARIES,
  INSTRUMENTS,
  LABEL_NAMES,
} from './instruments.js';

describe('INSTRUMENTS', () => {
  it('declares sixteen instruments, each under its own id and name, labelled by the limit first', () => {
    const instruments = Object.entries(INSTRUMENTS);
    expect(instruments).toHaveLength(16);
    for (const [id, instrument] of instruments) {
      expect([id, instrument.labels[0], instrument.labels.every((label) => label in LABEL_NAMES)]).toEqual([
        instrument.id,
        'limit',
        true,
      ]);
      // Seconds: the histograms, and the readings (an adaptive limit's two latencies).
      const seconds = instrument.kind === 'histogram' || instrument.kind === 'reading';
      expect([id, instrument.unit === 's', instrument.boundaries !== undefined]).toEqual([
        id,
        seconds,
        instrument.kind === 'histogram',
      ]);
    }
    expect(new Set(instruments.map(([, instrument]) => instrument.name)).size).toBe(16);
    expect(Object.isFrozen(INSTRUMENTS.decisions.labels)).toBe(true);
    expect(instruments.filter(([, instrument]) => instrument.kind === 'reading').map(([id]) => id)).toEqual([
      'adaptiveMinLatency',
      'adaptiveLatency',
    ]);
  });

  it('gives the histograms the default boundaries', () => {
    expect(INSTRUMENTS.delay.boundaries).toBe(DEFAULT_DELAY_BOUNDARIES);
    expect(INSTRUMENTS.storeDuration.boundaries).toBe(DEFAULT_STORE_BOUNDARIES);
    for (const boundaries of [DEFAULT_DELAY_BOUNDARIES, DEFAULT_STORE_BOUNDARIES])
      expect(checkBoundaries(boundaries, 'x', [])).toEqual(boundaries);
  });
});

describe('checkBoundaries', () => {
  it('returns the fallback for undefined, and a frozen copy of good boundaries', () => {
    const fallback = [1];
    expect(checkBoundaries(undefined, 'x.y', fallback)).toBe(fallback);
    const given = [0.5, 2];
    const checked = checkBoundaries(given, 'x.y', fallback);
    expect([checked, checked === given, Object.isFrozen(checked)]).toEqual([[0.5, 2], false, true]);
  });

  it.each([
    [[]],
    [[0, 1]],
    [[-1]],
    [[0.5, 0.1]],
    [[1, 1]],
    [[Number.NaN]],
    [[Number.POSITIVE_INFINITY]],
    [['1']],
    [1],
    [null],
  ])('refuses %o, naming the field', (value) => {
    expect(() => checkBoundaries(value, 'exporter.delayBuckets', [])).toThrow(InvalidOptionError);
    expect(() => checkBoundaries(value, 'exporter.delayBuckets', [])).toThrow(
      expect.objectContaining({
        field: 'exporter.delayBuckets',
        message: expect.stringContaining(
          'a non-empty array of finite numbers of seconds, each greater than 0 and than the one before',
        ),
      }),
    );
  });
});

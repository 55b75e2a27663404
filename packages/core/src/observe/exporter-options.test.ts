import { describe, expect, it } from 'vitest';
import { parseExporterOptions, type ExporterOptionSpec } from './exporter-options.js';
import { DEFAULT_DELAY_BOUNDARIES, DEFAULT_STORE_BOUNDARIES } from './instruments.js';

interface Sink {
  write(): void;
}

const spec: ExporterOptionSpec<Sink> = {
  owner: 'testObserver',
  target: ['sink', (value): value is Sink => typeof (value as Sink | undefined)?.write === 'function', 'a sink'],
  prefix: ['t_', /^[a-z_]*$/, 'lower-case letters and _'],
  boundaries: { delay: 'delayBuckets', storeDuration: 'storeBuckets' },
};
const sink: Sink = { write() {} };

describe('parseExporterOptions', () => {
  it('fills in the prefix and the instruments’ default boundaries', () => {
    const config = parseExporterOptions({ sink }, spec);
    expect(config).toEqual({
      target: sink,
      prefix: 't_',
      boundaries: { delay: DEFAULT_DELAY_BOUNDARIES, storeDuration: DEFAULT_STORE_BOUNDARIES },
      storeDurations: true,
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.boundaries)).toBe(true);
  });

  it('takes the given prefix and boundaries under the exporter’s names', () => {
    const config = parseExporterOptions({ sink, prefix: '', delayBuckets: [1, 2], storeBuckets: [0.5] }, spec);
    expect([config.prefix, config.boundaries]).toEqual(['', { delay: [1, 2], storeDuration: [0.5] }]);
  });

  it('takes storeDurations: false (no store duration histogram)', () => {
    expect(parseExporterOptions({ sink, storeDurations: false }, spec).storeDurations).toBe(false);
  });

  it.each([
    [null, 'testObserver', 'an options object'],
    [{}, 'testObserver.sink', 'a sink'],
    [{ sink: {} }, 'testObserver.sink', 'a sink'],
    [{ sink, prefix: 'T' }, 'testObserver.prefix', 'lower-case letters and _'],
    [{ sink, prefix: 1 }, 'testObserver.prefix', 'lower-case letters and _'],
    [{ sink, delayBuckets: [] }, 'testObserver.delayBuckets', 'each greater than 0 and than the one before'],
    [{ sink, storeBuckets: [2, 1] }, 'testObserver.storeBuckets', 'each greater than 0 and than the one before'],
    [{ sink, storeDurations: 'no' }, 'testObserver.storeDurations', 'true (time every store call'],
    [
      { sink, delayBoundaries: [1] },
      'testObserver.delayBoundaries',
      'testObserver takes sink, prefix, delayBuckets, storeBuckets, storeDurations',
    ],
  ])('refuses %o, naming %s', (options, field, expected) => {
    expect(() => parseExporterOptions(options, spec)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field, message: expect.stringContaining(expected) }),
    );
  });
});

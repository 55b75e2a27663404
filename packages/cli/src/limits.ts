import { ALGORITHM_FACTORIES, InvalidOptionError, type Algorithm } from '@rl/core';

/** The algorithm factories of `@rl/core` a `--limit` may name (its one list), with their options as `@rl/core` takes them. */
const FACTORIES: Readonly<Record<string, (options: never) => Algorithm>> = ALGORITHM_FACTORIES;
export const ALGORITHM_NAMES = Object.keys(FACTORIES);

/** One limit to simulate: its label (the text it was given as), factory name, options and algorithm. */
export interface LimitSpec {
  readonly label: string;
  readonly factory: string;
  readonly options: Readonly<Record<string, unknown>>;
  readonly algorithm: Algorithm;
}

const CALL = /^\s*([A-Za-z]+)\s*\((.*)\)\s*$/s;

/**
 * Parses one `--limit`: `tokenBucket(capacity=400,refillRate=200)`, `fixedWindow(limit=200,window=1s)`,
 * `leakyBucket(capacity=20,leakRate=100,mode=shape)`: a factory of `@rl/core` and its options as
 * `name=value` pairs (a number, `true`/`false`, or a string such as `1s`; quotes optional). The
 * factory checks the options: its `InvalidOptionError` (for example on `tokenBucket.capacity`) is
 * thrown as it is. A text that is not such a call throws `InvalidOptionError` on `--limit` naming the
 * part to fix.
 */
export function parseLimit(text: string): LimitSpec {
  const { factory, options } = parseCall(text);
  return limitOf(factory, options, text.trim());
}

/** A call's factory name and options (`name=value` pairs), as {@link parseLimit} reads them; not checked against any factory. */
export function parseCall(text: string): { factory: string; options: Record<string, unknown> } {
  const match = CALL.exec(text);
  if (match === null) {
    throw new InvalidOptionError(
      '--limit',
      text,
      `an algorithm call such as "tokenBucket(capacity=400,refillRate=200)" or "fixedWindow(limit=200,window=1s)"`,
    );
  }
  const factory = match[1]!;
  const options: Record<string, unknown> = {};
  const body = match[2]!.trim();
  if (body !== '') {
    for (const pair of body.split(',')) {
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      if (eq < 0 || !/^[A-Za-z]+$/.test(name)) {
        throw new InvalidOptionError(
          `--limit ${factory}`,
          pair.trim(),
          'options as name=value pairs separated by commas, for example capacity=400',
        );
      }
      if (name in options) throw new InvalidOptionError(`--limit ${factory}.${name}`, pair.trim(), 'each option once');
      options[name] = optionValue(pair.slice(eq + 1).trim());
    }
  }
  return { factory, options };
}

/**
 * A limit from a factory name and its options (a config file's `{ "tokenBucket": { "capacity": 400,
 * ... } }`); `label` defaults to the call it stands for.
 */
export function limitOf(factory: string, options: Record<string, unknown>, label?: string): LimitSpec {
  const make = Object.hasOwn(FACTORIES, factory) ? FACTORIES[factory] : undefined;
  if (make === undefined) {
    const near = ALGORITHM_NAMES.find((n) => n.toLowerCase() === factory.toLowerCase());
    throw new InvalidOptionError(
      '--limit',
      factory,
      near === undefined ? `one of ${ALGORITHM_NAMES.join(', ')}` : `${near} (names are case-sensitive)`,
    );
  }
  const algorithm = make(options as never);
  return { label: label ?? callText(factory, options), factory, options, algorithm };
}

/** `tokenBucket(capacity=400,refillRate=200)`. */
export function callText(factory: string, options: Record<string, unknown>): string {
  return `${factory}(${Object.entries(options)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(',')})`;
}

function optionValue(text: string): unknown {
  const unquoted = /^(["'])(.*)\1$/.exec(text);
  if (unquoted) return unquoted[2];
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (/^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(text)) return Number(text);
  return text;
}

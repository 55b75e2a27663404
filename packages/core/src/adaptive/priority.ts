import { InvalidOptionError } from '../errors.js';
import { checkOptions } from '../options.js';

/** The named classes of work, most important first. */
export type PriorityClass = 'critical' | 'normal' | 'sheddable';

/**
 * A request's class: a name, or a number in (0, 1], the share of the limit work of that class may fill
 * (`critical` is 1, `normal` 0.9 and `sheddable` 0.5 by default). As the limit tightens, in-flight work
 * reaches the lowest share first, so the lowest class is refused first and the rest of the limit stays
 * for the classes above it.
 */
export type Priority = PriorityClass | number;

/** The shares of the named classes (`AdaptiveConcurrencyOptions.shares`); `critical` is always 1. */
export interface PriorityShares {
  /** Default 0.9. */
  normal?: number;
  /** Default 0.5. */
  sheddable?: number;
}

/** The most distinct numbered shares one limit takes (each is a label of its metrics). */
export const MAX_NUMBERED_CLASSES = 16;

/** One class as the limit counts it: its label in metrics and its share. */
export interface ClassOf {
  readonly label: string;
  readonly share: number;
}

/** The classes of one adaptive limit: names and numbers resolved to a share and a label. */
export class PriorityClasses {
  private readonly named: Readonly<Record<PriorityClass, ClassOf>>;
  /** Numbered classes seen, so that each number's label is built once. */
  private readonly numbered = new Map<number, ClassOf>();

  constructor(shares: unknown, field: string) {
    const o = shares === undefined ? {} : checkOptions(shares, ['normal', 'sheddable'], field);
    const normal = o.normal === undefined ? 0.9 : share(o.normal, `${field}.normal`);
    const sheddable = o.sheddable === undefined ? 0.5 : share(o.sheddable, `${field}.sheddable`);
    if (sheddable > normal)
      throw new InvalidOptionError(`${field}.sheddable`, sheddable, `a share at most normal's (${normal})`);
    this.named = Object.freeze({
      critical: { label: 'critical', share: 1 },
      normal: { label: 'normal', share: normal },
      sheddable: { label: 'sheddable', share: sheddable },
    });
  }

  /** The class of `priority` (undefined: `normal`); a bad one throws an `InvalidOptionError` naming `field`. */
  of(priority: unknown, field: string): ClassOf {
    if (priority === undefined) return this.named.normal;
    if (typeof priority === 'string' && Object.hasOwn(this.named, priority))
      return this.named[priority as PriorityClass];
    if (typeof priority === 'number') {
      const known = this.numbered.get(priority);
      if (known !== undefined) return known;
      // Each share is a label of metrics: a bounded set, not a number per request.
      if (this.numbered.size >= MAX_NUMBERED_CLASSES)
        throw new InvalidOptionError(field, priority, `one of at most ${MAX_NUMBERED_CLASSES} distinct shares`);
      const each = { label: `share-${share(priority, field)}`, share: priority };
      this.numbered.set(priority, each);
      return each;
    }
    throw new InvalidOptionError(
      field,
      priority,
      "'critical', 'normal', 'sheddable', or a share of the limit in (0, 1]",
    );
  }
}

function share(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > 1)
    throw new InvalidOptionError(field, value, 'a share of the limit greater than 0 and at most 1');
  return value;
}

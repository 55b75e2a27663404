import { describe, expect, it, vi } from 'vitest';
import { ReplyPacer } from './reply-pacer.js';

/**
 * A client that writes as node-redis does: the commands it is given in one turn go in one write, in a
 * `setImmediate` queued by the first of them. Its answers come when the test says, several in one
 * synchronous block (one read of the socket).
 */
class LateWriter {
  /** Each write: the commands it carried. */
  readonly writes: string[][] = [];
  private queued: string[] = [];
  private readonly answers = new Map<string, { resolve(value: string): void; reject(error: Error): void }>();

  call(name: string): Promise<string> {
    if (this.queued.push(name) === 1)
      setImmediate(() => {
        this.writes.push(this.queued);
        this.queued = [];
      });
    return new Promise((resolve, reject) => this.answers.set(name, { resolve, reject }));
  }

  /** Answers the commands in one block (one read): each resolves to its name, or rejects with `error:<name>`. */
  read(...names: string[]): void {
    for (const name of names) {
      if (name.startsWith('error:')) this.answers.get(name.slice(6))!.reject(new Error(name));
      else this.answers.get(name)!.resolve(name);
    }
  }

  /** Commands written so far. */
  get written(): number {
    return this.writes.reduce((sum, write) => sum + write.length, 0);
  }
}

/** A call through `pacer`, as the node-redis adapter makes one: given to the client, then `sent()`. */
function pacedCall(pacer: ReplyPacer, client: LateWriter, name: string): Promise<string> {
  const answer = client.call(name);
  pacer.sent();
  return pacer.pace(answer);
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Waits, a turn at a time (bounded), until `done()`. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !done(); i++) await turn();
}

describe('ReplyPacer', () => {
  it('answers read at once are handed on one per write: each after the write of the call the one before it caused', async () => {
    const pacer = new ReplyPacer();
    const client = new LateWriter();
    /** For each answer handed on: the commands written by then. */
    const seen: [string, number][] = [];
    const followers: Promise<string>[] = [];
    const first = ['a', 'b', 'c'].map((name) =>
      pacedCall(pacer, client, name).then((answer) => {
        seen.push([answer, client.written]);
        followers.push(pacedCall(pacer, client, `${answer}2`));
      }),
    );
    await turn();
    expect(client.writes).toEqual([['a', 'b', 'c']]);
    client.read('a', 'b', 'c');
    await Promise.all(first);
    await until(() => client.written === 6);
    // Without pacing: [['a', 3], ['b', 3], ['c', 3]], and the three followers in one write.
    expect(seen).toEqual([
      ['a', 3],
      ['b', 4],
      ['c', 5],
    ]);
    expect(client.writes).toEqual([['a', 'b', 'c'], ['a2'], ['b2'], ['c2']]);
    client.read('a2', 'b2', 'c2');
    await expect(Promise.all(followers)).resolves.toEqual(['a2', 'b2', 'c2']);
  });

  it('an answer alone is handed on at once, in the turn it is read', async () => {
    const pacer = new ReplyPacer();
    const client = new LateWriter();
    const answer = pacedCall(pacer, client, 'a');
    await turn();
    let turnEnded = false;
    client.read('a');
    setImmediate(() => (turnEnded = true));
    await expect(answer).resolves.toBe('a');
    expect(turnEnded).toBe(false);
  });

  it('answers held while nothing is sent are still handed on, in order, each in a later callback than the one before', async () => {
    const pacer = new ReplyPacer();
    const client = new LateWriter();
    const order: string[] = [];
    /** What had been handed on when each answer's microtasks had run. */
    const after: string[][] = [];
    const answers = ['a', 'b', 'c'].map((name) =>
      pacedCall(pacer, client, name).then((answer) => {
        order.push(answer);
        queueMicrotask(() => after.push([...order]));
      }),
    );
    await turn();
    client.read('a', 'b', 'c');
    await Promise.all(answers);
    expect(after).toEqual([['a'], ['a', 'b'], ['a', 'b', 'c']]);
  });

  it('a rejection waits its turn as a reply does', async () => {
    const pacer = new ReplyPacer();
    const client = new LateWriter();
    const seen: [string, number][] = [];
    const a = pacedCall(pacer, client, 'a').then((answer) => {
      seen.push([answer, client.written]);
      void pacedCall(pacer, client, 'a2');
    });
    const b = pacedCall(pacer, client, 'b').catch((error: Error) => seen.push([error.message, client.written]));
    await turn();
    client.read('a', 'error:b');
    await Promise.all([a, b]);
    expect(seen).toEqual([
      ['a', 2],
      ['error:b', 3],
    ]);
  });

  it('costs no turn of its own while no answer waits: sent() queues nothing', () => {
    const pacer = new ReplyPacer();
    const immediates = vi.spyOn(globalThis, 'setImmediate');
    try {
      for (let i = 0; i < 3; i++) pacer.sent();
      expect(immediates).not.toHaveBeenCalled();
    } finally {
      immediates.mockRestore();
    }
  });
});

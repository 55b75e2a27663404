/**
 * Hands the answers of a client that writes late to the store one write at a time. node-redis (4, 5
 * and 6) writes the commands it is given in a `setImmediate` of its own: all the commands of one turn
 * of the event loop reach the socket in one write, in the check phase, after every callback of the
 * turn has run. When several of the store's calls are answered in one turn (one read of the socket
 * holds them all once the calls went in one write), the decisions they answer would all run, and all
 * the calls that follow them be made, before any of those reaches Redis: Redis idles while the process
 * works, then the process idles while Redis works. So an answer is handed on at once only when no
 * other has been since the client last wrote; the others wait, in order, and each is handed on after
 * the client's write of what the one before it caused (a `setImmediate` queued after the call that
 * made the client queue its own runs after that write). Redis then works on those calls while the
 * process handles the next answer. A client that writes at once (ioredis) needs none of this.
 *
 * Nothing waits when nothing was sent: an answer held while nothing is sent is handed on in the
 * check phase of its turn, the next one in the next turn. A rejection waits as a reply does.
 */
export class ReplyPacer {
  /** Answers not handed on yet, oldest first: each settles its caller's promise. */
  private held: (() => void)[] = [];
  /** An answer was handed on since the last release: the calls it causes are not written yet. */
  private busy = false;
  /** The pending release, if any. */
  private release: NodeJS.Immediate | undefined;
  /** The pending release was queued after a call: it runs after the client's write of that call. */
  private afterCall = false;

  /**
   * To call right after the client was given a command (node-redis queues its write then): when
   * answers wait, the next is handed on after that write.
   */
  sent(): void {
    if (this.afterCall || (!this.busy && this.held.length === 0)) return;
    if (this.release !== undefined) clearImmediate(this.release);
    this.afterCall = true;
    this.release = setImmediate(this.next);
  }

  /** Settles as `answer` does, when its turn comes (see the class). */
  pace<T>(answer: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      answer.then(
        (value) => this.hand(() => resolve(value)),
        (error: unknown) => this.hand(() => reject(error)),
      );
    });
  }

  private hand(settle: () => void): void {
    if (this.busy || this.held.length > 0) this.held.push(settle);
    else {
      this.busy = true;
      settle();
    }
    // In the check phase of this turn at the latest, whether or not anything is sent.
    if (this.release === undefined) this.release = setImmediate(this.next);
  }

  private readonly next = (): void => {
    this.release = undefined;
    this.afterCall = false;
    this.busy = false;
    const settle = this.held.shift();
    if (settle === undefined) return;
    this.busy = true;
    settle();
    this.release = setImmediate(this.next);
  };
}

/**
 * Test support (not exported by the package): the system's Chromium, headless, driven over the
 * DevTools protocol on a pipe (`--remote-debugging-pipe`: file descriptors 3 and 4, messages ended by
 * NUL), with nothing but Node. The HTML report's test opens the page in it, points at the charts,
 * reads what the page shows and takes a screenshot.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

/** The names Chromium is installed under (Debian's `chromium` first); `RL_CHROMIUM` wins when set. */
const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];

/** The Chromium executable: `RL_CHROMIUM`, else the first of {@link NAMES} on the PATH; undefined when none. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.RL_CHROMIUM) return env.RL_CHROMIUM;
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    for (const name of NAMES) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

interface Message {
  id?: number;
  method?: string;
  sessionId?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
}

/** One page of a headless Chromium, and the protocol's commands on it. */
export class HeadlessPage {
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (result: Record<string, unknown>) => void; reject: (error: Error) => void; method: string }
  >();
  private readonly waiters: { method: string; resolve: (params: Record<string, unknown>) => void }[] = [];
  /** Every event of the page, in order (`Network.requestWillBeSent` among them once `Network.enable` ran). */
  readonly events: { method: string; params: Record<string, unknown> }[] = [];
  private sessionId: string | undefined;
  private stderr = '';
  private exited: Error | undefined;

  private constructor(
    private readonly child: ChildProcess,
    private readonly profile: string,
  ) {
    const input = child.stdio[4] as Readable;
    let buffer = '';
    input.setEncoding('utf8');
    input.on('data', (chunk: string) => {
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\0')) >= 0) {
        this.receive(JSON.parse(buffer.slice(0, end)) as Message);
        buffer = buffer.slice(end + 1);
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-4000)));
    child.on('exit', (code, signal) => {
      this.exited = new Error(`chromium exited (${signal ?? code}): ${this.stderr}`);
      for (const p of this.pending.values()) p.reject(this.exited);
      this.pending.clear();
    });
  }

  /** Starts `executable` headless with a fresh profile and opens a blank page of `width` × `height`. */
  static async open(executable: string, width: number, height: number): Promise<HeadlessPage> {
    const profile = mkdtempSync(join(tmpdir(), 'rl-chromium-'));
    const args = [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-extensions',
      '--hide-scrollbars',
      '--remote-debugging-pipe',
      `--user-data-dir=${profile}`,
      'about:blank',
    ];
    const child = spawn(executable, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
    const page = new HeadlessPage(child, profile);
    const { targetId } = await page.send('Target.createTarget', { url: 'about:blank' }, false);
    const { sessionId } = await page.send('Target.attachToTarget', { targetId, flatten: true }, false);
    page.sessionId = sessionId as string;
    await page.resize(width, height);
    await page.send('Page.enable');
    await page.send('Network.enable');
    return page;
  }

  /** A command of the protocol, on the page unless `onPage` is false (then on the browser). */
  send(method: string, params: Record<string, unknown> = {}, onPage = true): Promise<Record<string, unknown>> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    const message: Message = { id, method, params, ...(onPage && { sessionId: this.sessionId }) };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      (this.child.stdio[3] as Writable).write(JSON.stringify(message) + '\0');
    });
  }

  /** Resolves at the page's next `method` event. */
  next(method: string): Promise<Record<string, unknown>> {
    return new Promise((resolve) => this.waiters.push({ method, resolve }));
  }

  /** Opens `url` and resolves once its `load` event fired (its scripts ran). */
  async navigate(url: string): Promise<void> {
    const loaded = this.next('Page.loadEventFired');
    const { errorText } = await this.send('Page.navigate', { url });
    if (errorText) throw new Error(`chromium could not open ${url}: ${String(errorText)}`);
    await loaded;
  }

  /** The value of `expression` in the page (awaited when a promise), as JSON. */
  async evaluate<T>(expression: string): Promise<T> {
    const { result, exceptionDetails } = (await this.send('Runtime.evaluate', {
      expression,
      returnByValue: true,
      awaitPromise: true,
    })) as { result: { value: T }; exceptionDetails?: { exception?: { description?: string }; text: string } };
    if (exceptionDetails)
      throw new Error(`in the page: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    return result.value;
  }

  /** Sets the page's viewport to `width` × `height` CSS pixels (a window of that size: media queries follow). */
  async resize(width: number, height: number): Promise<void> {
    await this.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
  }

  /** Moves the mouse to (x, y) in CSS pixels of the viewport; resolves once the page handled it. */
  async pointAt(x: number, y: number): Promise<void> {
    await this.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x, y });
  }

  /** Presses and releases a key (`ArrowRight`, `Home`, ...) on the focused element. */
  async press(key: string): Promise<void> {
    await this.send('Input.dispatchKeyEvent', {
      type: 'rawKeyDown',
      key,
      code: key,
      windowsVirtualKeyCode: KEY_CODES[key] ?? 0,
    });
    await this.send('Input.dispatchKeyEvent', {
      type: 'keyUp',
      key,
      code: key,
      windowsVirtualKeyCode: KEY_CODES[key] ?? 0,
    });
  }

  /** A PNG of the whole page. */
  async screenshot(): Promise<Buffer> {
    const { data } = await this.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
    return Buffer.from(data as string, 'base64');
  }

  /** Closes the browser and removes its profile. */
  async close(): Promise<void> {
    if (!this.exited) {
      const gone = new Promise((resolve) => this.child.once('exit', resolve));
      await this.send('Browser.close', {}, false).catch(() => undefined);
      await gone;
    }
    rmSync(this.profile, { recursive: true, force: true });
  }

  private receive(message: Message): void {
    if (message.id !== undefined) {
      const pending = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) pending?.reject(new Error(`${pending.method}: ${message.error.message}`));
      else pending?.resolve(message.result ?? {});
      return;
    }
    if (message.method === undefined || message.sessionId !== this.sessionId) return;
    const params = message.params ?? {};
    this.events.push({ method: message.method, params });
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i]!.method === message.method) this.waiters.splice(i, 1)[0]!.resolve(params);
    }
  }
}

const KEY_CODES: Record<string, number> = { ArrowLeft: 37, ArrowRight: 39, Home: 36, End: 35 };

import { describe, expect, it } from 'vitest';
import { ResetListeners } from './reset-listeners.js';

describe("ResetListeners (an in-process store's watchResets)", () => {
  it('tells every listener, in the order they came, inside the call', () => {
    const listeners = new ResetListeners();
    const heard: string[] = [];
    const first = (key: string | undefined): void => void heard.push(`first ${String(key)}`);
    const second = (key: string | undefined): void => void heard.push(`second ${String(key)}`);
    listeners.listen(first);
    listeners.listen(second);
    listeners.tell('api:k');
    expect(heard).toEqual(['first api:k', 'second api:k']);
  });

  it('a listener that throws does not keep the others from hearing; its error is thrown once all were told', () => {
    const listeners = new ResetListeners();
    const heard: (string | undefined)[] = [];
    const failing = (): void => {
      throw new Error('listener failed');
    };
    const working = (key: string | undefined): void => void heard.push(key);
    listeners.listen(failing);
    listeners.listen(working);
    expect(() => listeners.tell('api:k')).toThrow('listener failed');
    expect(heard).toEqual(['api:k']);
  });

  it('tells no one once cleared (a closed store)', () => {
    const listeners = new ResetListeners();
    const heard: (string | undefined)[] = [];
    const listener = (key: string | undefined): void => void heard.push(key);
    listeners.listen(listener);
    listeners.clear();
    listeners.tell('api:k');
    expect(heard).toEqual([]);
  });
});

import { describe, expect, it, vi } from 'vitest';
import { Cancellation } from '../../src/upstream/cancellation.js';

/** The abort signal of every request and upstream call: AbortSignal's semantics, without its cost. */
describe('Cancellation', () => {
  it('runs each listener once, with the reason set, and never a removed one', () => {
    const cancel = new Cancellation();
    const seen: unknown[] = [];
    const kept = vi.fn(() => seen.push(cancel.reason));
    const removed = vi.fn();
    cancel.addEventListener('abort', kept);
    cancel.addEventListener('abort', removed);
    cancel.removeEventListener('abort', removed);
    cancel.abort('gone');
    cancel.abort('again');
    expect(kept).toHaveBeenCalledTimes(1);
    expect(removed).toHaveBeenCalledTimes(0);
    expect(seen).toEqual(['gone']);
    expect(() => cancel.throwIfAborted()).toThrow();
  });

  it('never runs a listener added after it aborted, and holds any number of listeners', () => {
    const cancel = new Cancellation();
    const many = Array.from({ length: 50 }, () => vi.fn());
    for (const listener of many) cancel.addEventListener('abort', listener);
    const warned = vi.spyOn(process, 'emitWarning');
    cancel.abort(new Error('client disconnected'));
    const late = vi.fn();
    cancel.addEventListener('abort', late);
    expect(many.map((listener) => listener.mock.calls.length)).toEqual(many.map(() => 1));
    expect(late).toHaveBeenCalledTimes(0);
    expect(warned).toHaveBeenCalledTimes(0);
    warned.mockRestore();
  });

  it('runs every listener when one throws, then throws the first error', () => {
    const cancel = new Cancellation();
    const after = vi.fn();
    cancel.addEventListener('abort', () => {
      throw new Error('listener failed');
    });
    cancel.addEventListener('abort', after);
    expect(() => cancel.abort('gone')).toThrow('listener failed');
    expect(after).toHaveBeenCalledTimes(1);
  });
});

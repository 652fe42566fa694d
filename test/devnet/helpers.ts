import { afterAll, beforeAll } from 'vitest';
import { type Devnet, type DevnetOptions, startDevnet } from '../../src/devnet/index.js';

/** Starts a devnet on free ports for the enclosing test file and closes it afterwards. */
export function useDevnet(options: DevnetOptions = {}): () => Devnet {
  let devnet: Devnet | undefined;
  beforeAll(async () => {
    devnet = await startDevnet({ seed: 'test-seed', ...options });
  });
  afterAll(async () => {
    await devnet?.close();
  });
  return () => {
    if (!devnet) throw new Error('devnet not started');
    return devnet;
  };
}

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export async function call<T = any>(url: string, init: RequestInit = {}): Promise<JsonResponse<T>> {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, body: (await res.json()) as T };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

import { type Browser, chromium } from 'playwright-core';
import { installed } from '../support/binaries.js';

/** Debian's Chromium, installed by `.ci/run`; playwright-core drives it (no browser download). */
export const CHROMIUM = '/usr/bin/chromium';
/** Whether the browser tests run: outside CI they are skipped without it; in CI its absence throws here. */
export const hasChromium = installed(CHROMIUM, 'Chromium', 'apt-get install chromium');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

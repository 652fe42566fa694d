import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { listen } from '../gateway/helpers.js';
import { hasChromium, launchChromium } from './chromium.js';

/**
 * GraphiQL as a person uses it, in Debian's Chromium driven by playwright-core (no browser
 * download): the page loads offline, the default query shows devnet data, and a query that needs
 * the token fails without the header and succeeds once it is typed into the Headers editor.
 * `.ci/run` installs Chromium; the screenshots land in test-artifacts/ (ignored by git).
 */

const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname;

let devnet: Devnet;
let gateway: Gateway;
let http: Awaited<ReturnType<typeof listen>>;
let browser: Browser;

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'browser' });
  gateway = createGateway({ ...loadConfig({}), upstreamUrls: devnet.urls, exampleToken: devnet.token });
  http = await listen(gateway);
  browser = await launchChromium();
  mkdirSync(ARTIFACTS, { recursive: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await http?.close();
  await gateway?.close();
  await devnet?.close();
});

/** Replaces the text of a GraphiQL editor, as a paste would (no auto-closed brackets). */
async function replaceText(page: Page, editor: string, text: string) {
  await page.locator(editor).click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
}

async function run(page: Page): Promise<string> {
  const response = page.waitForResponse(
    (r) => r.url().endsWith('/graphql') && r.request().method() === 'POST',
  );
  await page.locator('.graphiql-execute-button').click();
  await response;
  await page.waitForFunction(() =>
    (document.querySelector('.graphiql-response')?.textContent ?? '').includes('"'),
  );
  // The editor shows the JSON with non-breaking spaces and wrapped lines: compare it without spacing.
  return (await page.locator('.graphiql-response').innerText()).replace(/\s+/g, '');
}

describe.runIf(hasChromium)('GraphiQL in Chromium', () => {
  it('loads offline and runs its default query against the devnet', { timeout: 60_000 }, async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const external: string[] = [];
    page.on('request', (r) => {
      if (
        !r.url().startsWith('http://127.0.0.1') &&
        !r.url().startsWith('data:') &&
        !r.url().startsWith('blob:')
      )
        external.push(r.url());
    });
    await page.goto(http.url);
    await page.locator('.graphiql-execute-button').waitFor({ timeout: 30_000 });
    const text = await run(page);
    const block12 = devnet.data.blocks.hash[11] as string;
    expect(text).toContain('"selectedCategory":"BLOCKS"');
    expect(text).toContain(`"height":12,"hash":"${block12}"`);
    await page.screenshot({ path: `${ARTIFACTS}graphiql-default-query.png` });
    expect(external).toEqual([]);
  });

  it('runs a query that needs the token once the Authorization header is set', {
    timeout: 60_000,
  }, async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(http.url);
    await page.locator('.graphiql-execute-button').waitFor({ timeout: 30_000 });
    await replaceText(
      page,
      '.graphiql-query-editor',
      'query Failed { failedTransactions(pageSize: 2) { pageInfo { total } nodes { hash error } } }',
    );
    await page.getByRole('button', { name: 'Headers' }).click();
    const headersEditor = '.graphiql-editor-tool .graphiql-editor:visible';
    await replaceText(page, headersEditor, '{}');
    expect(await run(page)).toContain('UNAUTHENTICATED');

    await replaceText(page, headersEditor, `{"Authorization": "Bearer ${devnet.token}"}`);
    const text = await run(page);
    expect(text).not.toContain('errors');
    expect(text).toMatch(/"hash":"0x[0-9a-f]{64}","error":"/);
    await page.screenshot({ path: `${ARTIFACTS}graphiql-token-query.png` });
  });
});

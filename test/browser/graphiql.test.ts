import { mkdirSync, readdirSync } from 'node:fs';
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { exampleVariables } from '../../src/devnet/examples.js';
import { type Advance, type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { listen } from '../gateway/helpers.js';
import { hasChromium, launchChromium } from './chromium.js';

/**
 * GraphiQL as a person uses it, in Debian's Chromium driven by playwright-core (no browser
 * download): the page loads offline, the default query shows devnet data, and a query that needs
 * the token fails without the header and succeeds once it is typed into the Headers editor, and
 * every tab it opens with (one per operation of operations/) runs with its own variables.
 * `.ci/run` installs Chromium; the screenshots land in test-artifacts/ (ignored by git).
 */

const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname;

let devnet: Devnet;
let gateway: Gateway;
let http: Awaited<ReturnType<typeof listen>>;
let browser: Browser;

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'browser' });
  gateway = createGateway({
    ...loadConfig({}),
    // Subscription tabs: a poll every 50 ms, so that a block the test adds shows at once.
    live: { ...loadConfig({}).live, pollMs: 50 },
    upstreamUrls: devnet.urls,
    exampleToken: devnet.token,
    exampleVariables: exampleVariables(devnet.data),
  });
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

/**
 * Runs the active tab and resolves to the response of the request `isIt` recognises. GraphiQL may
 * swallow a click on a busy machine (the button re-renders between "Stop" and "Execute"): the
 * click is repeated until that request leaves, at most three times.
 */
async function execute(page: Page, isIt: (request: Request) => boolean) {
  const answer = page.waitForResponse((r) => isIt(r.request()), { timeout: 60_000 });
  for (let attempt = 1; ; attempt++) {
    const sent = page.waitForRequest(isIt, { timeout: 10_000 });
    await page.locator('.graphiql-execute-button[aria-label^="Execute"]').click();
    try {
      await sent;
      break;
    } catch (error) {
      if (attempt === 3) throw error;
    }
  }
  return answer;
}

/** Runs a query or mutation tab (a JSON POST naming its operation) and resolves to its answer. */
const runTab = (page: Page, operationName: string) =>
  execute(
    page,
    (r) =>
      r.url().endsWith('/graphql') &&
      r.method() === 'POST' &&
      (r.postDataJSON() as { operationName?: string } | null)?.operationName === operationName,
  );

/** For each subscription tab: the source it polls, and whether an advance of the chain is an event for it. */
const LIVE: Record<string, { source: string; moved(advance: Advance): boolean }> = {
  BlockAdded: { source: 'blocks', moved: (a) => a.heights.length > 0 },
  FailedTransactionAdded: { source: 'failed', moved: (a) => a.failedTxs.length > 0 },
  ValidatorUpdated: { source: 'validators', moved: (a) => a.validators.length > 0 },
  ValidatorStatisticsUpdated: { source: 'validators', moved: (a) => a.validators.length > 0 },
};

/**
 * Runs a subscription tab: once its stream is open and polled, the chain moves until the event
 * comes, the response pane shows it, and the subscription is stopped.
 */
async function runSubscriptionTab(page: Page, name: string, field: string) {
  const live = LIVE[name] as (typeof LIVE)[string];
  const polled = gateway.live.hub.afterPoll(live.source);
  // GraphiQL subscribes as an EventSource would: a GET asking for text/event-stream.
  const response = execute(
    page,
    (r) => r.url().includes(`/graphql?query=subscription+${name}`) && r.method() === 'GET',
  );
  const opened = await response;
  expect(opened.headers()['content-type'], name).toMatch(/^text\/event-stream/);
  expect(opened.request().headers().accept, name).toBe('text/event-stream');
  expect(opened.request().headers().authorization, name).toBe(`Bearer ${devnet.token}`);
  await polled;
  while (!live.moved(devnet.advance(1)));
  await expect
    .poll(() => page.locator('.graphiql-response').innerText(), {
      timeout: 30_000,
      message: `${name}'s event in the response pane`,
    })
    .toMatch(new RegExp(`"${field}"`));
  expect(await page.locator('.graphiql-response').innerText()).not.toMatch(/"errors"/);
  await page.locator('.graphiql-execute-button[aria-label^="Stop"]').click();
}

/** The operations of operations/, by name (each file is named after its operation). */
const OPERATIONS = readdirSync(new URL('../../operations/', import.meta.url))
  .filter((file) => file.endsWith('.graphql'))
  .map((file) => file.slice(0, -'.graphql'.length))
  .sort();

describe.runIf(hasChromium)('GraphiQL tabs in Chromium', () => {
  // Fourteen tabs, each clicked (a click GraphiQL swallows is repeated after 10 s): 104 s on an
  // idle machine, before and after this session's changes, so a loaded CI machine needs more.
  it('opens with a tab per operation of operations/, each answering from the devnet', {
    timeout: 300_000,
  }, async () => {
    const variables = exampleVariables(devnet.data);
    expect(OPERATIONS).toEqual(Object.keys(variables).sort());
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(http.url);
    await page.locator('.graphiql-execute-button').waitFor({ timeout: 30_000 });
    const tabs = page.locator('.graphiql-tab');
    expect(await tabs.allInnerTexts()).toEqual(['Overview', ...OPERATIONS]);

    for (const [index, name] of ['Overview', ...OPERATIONS].entries()) {
      // From the keyboard (focus, Enter). Not a mouse click: on a first visit GraphiQL (as Yoga
      // 5.24 bundles it) leaves each default tab but the last with a stale drag offset, which
      // applies once the tab has focus, so on mouse-down the tab jumps away from the pointer and
      // the first click lands on the tab strip (plain Yoga with `defaultTabs` does the same).
      await tabs.nth(index).locator('.graphiql-tab-button').press('Enter');
      await expect
        .poll(() => page.locator('.graphiql-tab-active').innerText(), { message: `the ${name} tab active` })
        .toBe(name);
      // The editor shows the tab's document before it runs (a busy machine may lag a frame behind).
      if (name !== 'Overview') {
        await expect
          .poll(() => page.locator('.graphiql-query-editor').innerText(), {
            timeout: 15_000,
            message: `${name}'s document in the editor`,
          })
          .toMatch(new RegExp(`(query|mutation|subscription)\\s+${name}\\b`));
      }
      if (name in LIVE) {
        await runSubscriptionTab(page, name, name.charAt(0).toLowerCase() + name.slice(1));
        continue;
      }
      const response = await runTab(page, name);
      const sent = response.request().postDataJSON();
      expect(response.request().headers().authorization, name).toBe(`Bearer ${devnet.token}`);
      if (name !== 'Overview') expect(sent.variables, name).toEqual(variables[name]);
      const body = await response.json();
      expect(body.errors, name).toBeUndefined();
      expect(body.data, name).toBeTruthy();
      for (const [field, value] of Object.entries(body.data))
        expect(value, `${name}.${field}`).not.toBeNull();
      // The answer is the one the response pane shows.
      await expect
        .poll(() => page.locator('.graphiql-response').innerText(), {
          message: `${name}'s answer in the response pane`,
        })
        .toMatch(new RegExp(`"${Object.keys(body.data)[0]}"`));
      if (name === 'UpdateBuybackRound') {
        const { input } = variables[name] as { input: { roundId: string; totalSlots: number } };
        expect(body.data.updateBuybackRound.round).toMatchObject(input);
      }
    }
    await page.screenshot({ path: `${ARTIFACTS}graphiql-operation-tabs.png` });
  });
});

// Every page at a phone's width (390 px) and a desktop's (1400 px), in the light and the dark
// colour scheme: the page never scrolls sideways (wide tables scroll in their own box, card
// grids stack), the main navigation and the account menu can be reached (behind "Menu" on a
// phone, inline on a desktop), the navigation works, text is readable, no word in a table
// cell is broken across lines, nothing logs an error.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, waitForHydration } from './harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

const VIEWPORTS = [
  { width: 390, height: 844, narrow: true },
  { width: 1400, height: 900, narrow: false },
];
const SCHEMES = ['light', 'dark'];

// Every page an admin can open; the budget page's path is read from the Budgets page's links.
const PAGES = [
  '/', '/teams', '/teams/ml-research', '/projects/llm-pretrain', '/budgets', 'BUDGET', '/savings',
  '/what-if', '/statements', '/approvals', '/enforcement', '/ingestion', '/account',
  '/admin/users', '/admin/teams', '/admin/audit', '/admin/allocation',
];
const HEADINGS = { '/enforcement': 'Enforcement', '/approvals': 'Approved projects' };

const MENU = 'header.topbar details.menu > summary';
const NAV = 'header.topbar nav[aria-label="Main"]';

/** Signs in as in harness.signIn, but the account menu may be folded away on a phone. */
async function signIn(page, account) {
  await page.goto(`${server.baseUrl}/login?next=%2F`);
  await waitForHydration(page);
  await page.fill('input[name="email"]', account.email);
  await page.fill('input[name="password"]', account.password);
  await page.click('[data-testid="login-form"] button[type="submit"]');
  await page.waitForSelector('[data-testid="signed-in-as"]', { state: 'attached', timeout: 30_000 });
}

/** Hydrated, with its heading, nothing still loading, and the notes fetched after hydration in. */
async function settle(page) {
  await waitForHydration(page);
  await page.waitForSelector('main h1', { timeout: 30_000 });
  await page.waitForFunction(() => !document.querySelector('main .loading'), null, { timeout: 30_000 });
  await page.waitForLoadState('networkidle', { timeout: 30_000 });
}

/** The page is no wider than the window; else names the elements that stick out. */
async function assertNoSidewaysScroll(page, label) {
  const { scrollWidth, innerWidth, culprits } = await page.evaluate(() => {
    const innerWidth = window.innerWidth;
    const scrollWidth = document.documentElement.scrollWidth;
    const culprits = [];
    if (scrollWidth > innerWidth) {
      const clipped = (el) => {
        for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
          if (getComputedStyle(p).overflowX !== 'visible') return true;
        }
        return false;
      };
      for (const el of document.body.querySelectorAll('*')) {
        if (culprits.length >= 6) break;
        if (el.getBoundingClientRect().right <= innerWidth + 0.5 || clipped(el)) continue;
        const cls = el.getAttribute('class');
        const id = el.getAttribute('data-testid');
        culprits.push(`${el.tagName.toLowerCase()}${cls ? `.${cls.trim().split(/\s+/).join('.')}` : ''}`
          + `${id ? `[data-testid=${id}]` : ''} (right edge ${Math.round(el.getBoundingClientRect().right)})`);
      }
    }
    return { scrollWidth, innerWidth, culprits };
  });
  assert.ok(scrollWidth <= innerWidth,
    `${label}: the page is ${scrollWidth}px wide in a ${innerWidth}px window; sticking out: ${culprits.join(', ')}`);
}

/**
 * No word of letters only, in a table cell, is drawn on two lines ("propos ed"): a DOM Range
 * over each such word has one client rect (none when it is folded away).
 */
async function assertNoBrokenWords(page, label) {
  const broken = await page.evaluate(() => {
    const found = [];
    const main = document.querySelector('main');
    const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    for (let node = walker.nextNode(); node && found.length < 6; node = walker.nextNode()) {
      const cell = node.parentElement?.closest('td, th');
      if (!cell) continue;
      // A folded <details> lays nothing out for the reader; opening it lays the table out again.
      const folded = node.parentElement.closest('details');
      if (folded && !folded.open && !node.parentElement.closest('summary')) continue;
      for (const match of node.textContent.matchAll(/\S+/gu)) {
        if (!/^\p{L}{2,}$/u.test(match[0])) continue;
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (lines.size > 1) found.push(match[0]);
      }
    }
    return found;
  });
  assert.deepEqual(broken, [], `${label}: words broken across lines in table cells`);
}

/** Visible and horizontally inside the window, so a tap or click can reach it. */
async function assertOnScreen(page, selector, label) {
  const target = page.locator(selector).first();
  await target.waitFor({ state: 'visible', timeout: 10_000 });
  const box = await target.boundingBox();
  const { width } = page.viewportSize();
  assert.ok(box && box.x >= 0 && box.x + box.width <= width + 0.5,
    `${label}: ${selector} is at x=${box?.x}..${box && box.x + box.width}, outside the ${width}px window`);
}

function rgb(color) {
  const [r, g, b] = color.match(/[\d.]+/g).map(Number);
  const lin = (c) => { const s = c / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}
const contrast = (a, b) => { const [x, y] = [rgb(a), rgb(b)].sort((m, n) => n - m); return (x + 0.05) / (y + 0.05); };

/** The scheme is the one asked for, and the heading and the navigation are readable on it. */
async function assertScheme(page, scheme, label) {
  const colours = await page.evaluate(() => {
    const css = (selector, property) => getComputedStyle(document.querySelector(selector))[property];
    return {
      dark: matchMedia('(prefers-color-scheme: dark)').matches,
      page: css('body', 'backgroundColor'),
      heading: css('main h1', 'color'),
      bar: css('header.topbar', 'backgroundColor'),
      link: css('header.topbar .brand', 'color'),
      menu: css('header.topbar details.menu > summary', 'color'),
    };
  });
  assert.equal(colours.dark, scheme === 'dark', `${label}: prefers-color-scheme`);
  assert.equal(rgb(colours.page) < 0.2, scheme === 'dark', `${label}: the page background ${colours.page}`);
  for (const [what, fg, bg] of [['heading', colours.heading, colours.page], ['brand', colours.link, colours.bar],
    ['menu button', colours.menu, colours.bar]]) {
    assert.ok(contrast(fg, bg) >= 4.5, `${label}: the ${what} (${fg} on ${bg}) has contrast ${contrast(fg, bg).toFixed(2)}`);
  }
}

/** Phones: one column of cards, and every table fits its box (scrolling inside it if wider). */
async function assertStacked(page, label) {
  const { grids, tables } = await page.evaluate(() => ({
    grids: [...document.querySelectorAll('main .cards')]
      .filter((g) => new Set([...g.children].map((c) => Math.round(c.getBoundingClientRect().left))).size > 1)
      .map((g) => g.getAttribute('aria-label')),
    tables: [...document.querySelectorAll('main table')]
      .filter((t) => t.getBoundingClientRect().right > window.innerWidth + 0.5
        || (t.scrollWidth > t.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(t).overflowX)))
      .map((t) => t.dataset.testid ?? t.className),
  }));
  assert.deepEqual(grids, [], `${label}: card grids in more than one column`);
  assert.deepEqual(tables, [], `${label}: tables that stick out instead of scrolling in their box`);
}

/**
 * The navigation and the account menu can be reached. On a phone the "Menu" button shows
 * and the navigation is folded until it is opened; on a desktop the links show at once.
 * With `navigate`, following a navigation link opens its page (and, on a phone, folds the
 * menu again).
 */
async function assertNavigation(page, viewport, path, label, { navigate, signedIn }) {
  const target = path === '/enforcement' ? '/approvals' : '/enforcement';
  const link = `${NAV} a[href="${target}"]`;
  if (viewport.narrow) {
    await assertOnScreen(page, MENU, label);
    assert.equal(await page.locator(link).isVisible(), false, `${label}: the navigation is folded`);
    await page.click(MENU);
    await assertOnScreen(page, link, `${label}, menu open`);
    await assertNoSidewaysScroll(page, `${label}, menu open`);
  } else {
    assert.equal(await page.locator(MENU).isVisible(), false, `${label}: no Menu button on a wide screen`);
    await assertOnScreen(page, link, label);
  }
  await assertOnScreen(page, `${NAV} a[href="/enforcement"]`, label);
  if (signedIn) {
    for (const item of ['[data-testid="signed-in-as"]', '[data-testid="sign-out"]', 'header .user-menu a[href="/admin/users"]']) {
      await assertOnScreen(page, item, `${label}: the account menu`);
    }
  } else {
    await assertOnScreen(page, 'header .user-menu a[href="/login"]', `${label}: the sign-in link`);
  }
  if (!navigate) return;

  await page.click(link);
  await page.waitForURL((url) => url.pathname === target, { timeout: 30_000 });
  await page.waitForSelector(`main h1:text-is("${HEADINGS[target]}")`, { timeout: 30_000 });
  if (viewport.narrow) {
    await page.waitForFunction(() => !document.querySelector('header.topbar details.menu').open, null, { timeout: 10_000 });
    assert.equal(await page.locator(link).isVisible(), false, `${label}: the menu folds after navigating`);
  }
}

for (const viewport of VIEWPORTS) {
  for (const scheme of SCHEMES) {
    test(`every page at ${viewport.width}×${viewport.height} in the ${scheme} scheme fits and can be navigated`, async () => {
      const context = await server.browser.newContext({
        viewport: { width: viewport.width, height: viewport.height },
        colorScheme: scheme,
      });
      const page = await context.newPage();
      const problems = [];
      let where = '';
      page.on('console', (m) => { if (m.type() === 'error') problems.push(`${where}: console: ${m.text()}`); });
      page.on('pageerror', (e) => problems.push(`${where}: uncaught: ${e}`));
      page.on('dialog', async (d) => { problems.push(`${where}: dialog: ${d.message()}`); await d.dismiss(); });
      try {
        // Signed out, the sign-in page has the same bar: the navigation and a sign-in link.
        where = `/login at ${viewport.width}px ${scheme}`;
        await page.goto(`${server.baseUrl}/login`);
        await settle(page);
        await assertScheme(page, scheme, where);
        await assertNoSidewaysScroll(page, where);
        await assertNavigation(page, viewport, '/login', where, { navigate: false, signedIn: false });
        assert.deepEqual(problems, []);

        await signIn(page, server.accounts.admin);
        const pages = [...PAGES];
        for (let i = 0; i < pages.length; i += 1) {
          const path = pages[i];
          where = `${path} at ${viewport.width}px ${scheme}`;
          await page.goto(`${server.baseUrl}${path}`);
          await settle(page);
          assert.equal(new URL(page.url()).pathname, path, `${where}: not redirected`);
          if (path === '/budgets') {
            const hrefs = await page.$$eval('[data-testid="budget-row"] a', (links) => links.map((a) => a.getAttribute('href')));
            const budget = hrefs.find((href) => /^\/budgets\/\d+$/.test(href));
            assert.ok(budget, `${where}: a link to a budget among ${hrefs.join(', ')}`);
            pages[pages.indexOf('BUDGET')] = budget;
          }
          await assertScheme(page, scheme, where);
          await assertNoSidewaysScroll(page, where);
          await assertNoBrokenWords(page, where);
          if (viewport.narrow) await assertStacked(page, where);
          await assertNavigation(page, viewport, path, where, { navigate: true, signedIn: true });
          await assertNoSidewaysScroll(page, `${where}, after following a link`);
          assert.deepEqual(problems, [], where);
        }
      } finally {
        await context.close();
      }
    });
  }
}

test('at 390 px without JavaScript the Menu opens and its links lead to their pages', async () => {
  const signedIn = await server.browser.newContext({ viewport: { width: 390, height: 844 } });
  const storageState = await (async () => {
    const page = await signedIn.newPage();
    await signIn(page, server.accounts.admin);
    return signedIn.storageState();
  })();
  await signedIn.close();

  const context = await server.browser.newContext({ viewport: { width: 390, height: 844 }, javaScriptEnabled: false, storageState });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`uncaught: ${e}`));
  try {
    await page.goto(`${server.baseUrl}/teams`);
    await page.waitForSelector('main h1:text-is("Teams")');
    const link = `${NAV} a[href="/enforcement"]`;
    assert.equal(await page.locator(link).isVisible(), false, 'the navigation is folded');
    await page.click(MENU);
    await assertOnScreen(page, link, 'no JavaScript, menu open');
    await assertNoSidewaysScroll(page, 'no JavaScript, menu open');
    await page.click(MENU);
    assert.equal(await page.locator(link).isVisible(), false, 'a second tap folds the menu');
    await page.click(MENU);
    await Promise.all([page.waitForURL((url) => url.pathname === '/enforcement'), page.click(link)]);
    await page.waitForSelector('main h1:text-is("Enforcement")');
    assert.equal(await page.locator(link).isVisible(), false, 'the next page starts with the menu folded');
    await assertNoSidewaysScroll(page, 'no JavaScript, /enforcement');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

// The Overview in Chromium: server-rendered, hydrated, figures equal to the database,
// and the period switch updating the page and the URL without a reload.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, signIn, startServer, units, waitForHydration } from './harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

async function teamsOnPage(page) {
  return page.$$eval('[data-testid="team-row"]', (rows) => rows.map((row) => ({
    team: row.querySelector('[data-testid="team-name"]').textContent,
    spend: row.querySelector('[data-testid="team-spend"]').dataset.value,
  })));
}

async function teamsInDatabase(range) {
  const [from, last] = range.split(' – ');
  // Team figures are the allocation (project, user tag, shared-cost rules, Unassigned)...
  const { rows } = await server.db.query(
    `select coalesce(t.name, 'Unassigned') as team, sum(a.unblended)::text as spend
     from allocated_daily_costs a left join teams t on t.id = a.team_id
     where a.day between $1 and $2 group by 1`, [from, last]);
  // ...and every dollar of the bill is in exactly one of them.
  const { rows: [bill] } = await server.db.query(
    'select coalesce(sum(unblended), 0)::text as spend from costs_by_user where day between $1 and $2', [from, last]);
  assert.equal(rows.reduce((sum, r) => sum + units(r.spend), 0n), units(bill.spend), `teams add up to the bill for ${range}`);
  return new Map(rows.map((r) => [r.team, r.spend]));
}

async function assertTeamsMatchDatabase(page) {
  const range = await page.textContent('[data-testid="period-range"]');
  const shown = await teamsOnPage(page);
  const expected = await teamsInDatabase(range);
  assert.equal(shown.length, expected.size, `team count for ${range}`);
  for (const { team, spend } of shown) {
    assert.ok(expected.has(team), `unexpected team ${team}`);
    assert.equal(units(spend), units(expected.get(team)), `${team} for ${range}`);
  }
  return range;
}

test('the Overview shows team figures equal to the database and switches period without a reload', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer);
  await page.goto(`${server.baseUrl}/`);
  await waitForHydration(page);
  const mtdRange = await assertTeamsMatchDatabase(page);
  assert.match(await page.textContent('[data-testid="period-total"]'), /^\$[\d,]+\.\d{2}$/);

  await page.evaluate(() => { window.__sameDocument = true; });
  await page.click('[data-testid="period-prev"]');
  await page.waitForURL(/period=prev/);
  await page.waitForFunction((old) => document.querySelector('[data-testid="period-range"]')?.textContent !== old, mtdRange);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the switch was a client-side navigation');
  assert.equal(await page.getAttribute('[data-testid="period-prev"]', 'aria-current'), 'page');
  const prevRange = await assertTeamsMatchDatabase(page);
  assert.notEqual(prevRange, mtdRange);

  await page.goBack();
  await page.waitForFunction((old) => document.querySelector('[data-testid="period-range"]')?.textContent === old, mtdRange);
  assert.ok(!page.url().includes('period=prev'), 'Back restored the previous URL');

  assert.deepEqual(problems.consoleErrors, []);
  assert.deepEqual(problems.pageErrors, []);
  assert.deepEqual(problems.dialogs, []);
  await page.close();
});

test('a period link opened directly is rendered by the server with its figures', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.lead, '/?period=90d&metric=amortized');
  await page.waitForURL(/period=90d/);
  await waitForHydration(page);
  assert.equal(await page.getAttribute('[data-testid="period-90d"]', 'aria-current'), 'page');
  assert.equal(await page.getAttribute('[data-testid="metric-amortized"]', 'aria-current'), 'page');
  const range = await page.textContent('[data-testid="period-range"]');
  const [from, last] = range.split(' – ');
  const { rows } = await server.db.query(
    'select sum(amortized)::text as total from costs_by_service where day between $1 and $2', [from, last]);
  assert.equal(units(await page.getAttribute('[data-testid="period-total"]', 'data-value')), units(rows[0].total));

  await page.click('nav[aria-label="Main"] a[href="/ingestion"]');
  await page.waitForSelector('[data-testid="run-row"]');
  assert.match(await page.textContent('[data-testid="run-row"]'), /demo\s*succeeded/);
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('the team filter narrows the Overview, survives a period change, and Back restores all teams', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/?period=30d');
  await waitForHydration(page);
  const allTotal = await page.getAttribute('[data-testid="period-total"]', 'data-value');
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.selectOption('[data-testid="team-select"]', 'ml-research');
  await page.click('[data-testid="team-form"] button');
  await page.waitForURL(/team=ml-research/);
  await page.waitForFunction((old) => document.querySelector('[data-testid="period-total"]')?.dataset.value !== old, allTotal);
  const range = await page.textContent('[data-testid="period-range"]');
  const shown = await teamsOnPage(page);
  assert.deepEqual(shown.map((t) => t.team), ['ml-research']);
  assert.equal(units(shown[0].spend), units((await teamsInDatabase(range)).get('ml-research')), range);
  assert.equal(units(await page.getAttribute('[data-testid="period-total"]', 'data-value')), units(shown[0].spend), range);

  await page.click('[data-testid="period-90d"]');
  await page.waitForURL((url) => url.search.includes('period=90d') && url.search.includes('team=ml-research'));
  await page.waitForFunction((old) => document.querySelector('[data-testid="period-range"]')?.textContent !== old, range);
  assert.deepEqual((await teamsOnPage(page)).map((t) => t.team), ['ml-research']);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'filters navigate client-side');

  await page.goBack();
  await page.goBack();
  await page.waitForFunction((old) => document.querySelector('[data-testid="period-total"]')?.dataset.value === old, allTotal);
  assert.ok((await teamsOnPage(page)).length > 1, 'Back restored every team');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('the account filter narrows the Overview to one linked account and survives a period change', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/?period=30d');
  await waitForHydration(page);
  const allTotal = await page.getAttribute('[data-testid="period-total"]', 'data-value');
  // The demo's account with the most spend in the period, by its name as Cost Explorer gave it.
  const range = await page.textContent('[data-testid="period-range"]');
  const [from, last] = range.split(' – ');
  const { rows: [account] } = await server.db.query(
    `select a.account_id as id, n.name, sum(a.unblended)::text as total from allocated_daily_costs a
     join aws_accounts n using (account_id) where a.day between $1 and $2
     group by 1, 2 order by sum(a.unblended) desc limit 1`, [from, last]);
  const options = await page.$$eval('[data-testid="account-select"] option', (o) => o.map((x) => x.textContent));
  assert.ok(options.includes(`${account.name} (${account.id})`), options.join());
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.selectOption('[data-testid="account-select"]', account.id);
  await page.click('[data-testid="account-form"] button');
  await page.waitForURL((url) => url.search.includes(`account=${account.id}`));
  await page.waitForFunction((old) => document.querySelector('[data-testid="period-total"]')?.dataset.value !== old, allTotal);
  // The account's total is its own facts, as Cost Explorer answered for it, to the last digit.
  const { rows: [facts] } = await server.db.query(
    `select sum(unblended)::text as total from costs_by_usage_type
     where account_id = $3 and day between $1 and $2`, [from, last, account.id]);
  assert.equal(units(await page.getAttribute('[data-testid="period-total"]', 'data-value')), units(facts.total));
  assert.equal(units(facts.total), units(account.total), 'the allocation in the account adds up to its facts');
  const shown = await teamsOnPage(page);
  const { rows: teams } = await server.db.query(
    `select coalesce(t.name, 'Unassigned') as team, sum(a.unblended)::text as spend from allocated_daily_costs a
     left join teams t on t.id = a.team_id where a.account_id = $3 and a.day between $1 and $2 group by 1`,
    [from, last, account.id]);
  assert.equal(shown.length, teams.length);
  for (const { team, spend } of teams) {
    assert.equal(units(shown.find((t) => t.team === team)?.spend), units(spend), team);
  }

  await page.click('[data-testid="period-90d"]');
  await page.waitForURL((url) => url.search.includes('period=90d') && url.search.includes(`account=${account.id}`));
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'filters navigate client-side');
  await page.goto(`${server.baseUrl}/?account=12345`);
  assert.match(await page.textContent('main'), /not an AWS account ID/);
  assert.deepEqual([...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('a team page reached from an account-filtered Overview keeps the account, and widens again in one click', async () => {
  const { page, problems } = await openPage(server.browser);
  const { rows: [account] } = await server.db.query(
    `select account_id as id from allocated_daily_costs where team_id is not null and account_id <> ''
     group by 1 order by sum(unblended) desc limit 1`);
  await signIn(page, server.baseUrl, server.accounts.viewer, `/?period=30d&account=${account.id}`);
  await waitForHydration(page);
  const range = await page.textContent('[data-testid="period-range"]');
  const [from, last] = range.split(' – ');
  const team = (await teamsOnPage(page)).find((t) => t.team !== 'Unassigned');
  await page.click(`[data-testid="team-name"] >> text="${team.team}"`);
  await page.waitForURL((url) => url.pathname.startsWith('/teams/') && url.search.includes(`account=${account.id}`));
  await page.waitForSelector('[data-testid="account-note"]');
  assert.equal(await page.inputValue('[data-testid="account-select"]'), account.id);
  // The team's allocation in that account over the same days, to the last digit.
  const inAccount = async (id) => (await server.db.query(
    `select coalesce(sum(a.unblended), 0)::text as total from allocated_daily_costs a join teams t on t.id = a.team_id
     where t.name = $3 and a.day between $1 and $2 and ($4::text is null or a.account_id = $4)`,
    [from, last, team.team, id])).rows[0].total;
  // The link opens the month to date; the same 30 days as the Overview are one click away.
  // A figure is compared once the page shows the one expected (the old one stays on screen
  // while the next loads), so a wrong figure fails by timing out with the last one shown.
  const shows = async (want) => {
    await page.waitForFunction((w) => {
      const v = document.querySelector('[data-testid="scope-total"]')?.dataset.value;
      return v !== undefined && Number(v) === Number(w);
    }, want, { timeout: 15000 }).catch(async () => {
      assert.equal(await page.getAttribute('[data-testid="scope-total"]', 'data-value'), want);
    });
  };
  await page.click('[data-testid="period-30d"]');
  await page.waitForURL((url) => url.search.includes('period=30d') && url.search.includes(`account=${account.id}`));
  await shows(await inAccount(account.id));
  await page.click('[data-testid="every-account"]');
  await page.waitForURL((url) => !url.search.includes('account=') && url.search.includes('period=30d'));
  await page.waitForSelector('[data-testid="account-note"]', { state: 'detached' });
  await shows(await inAccount(null));
  assert.deepEqual([...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

// The split release site (scripts/build-site.sh): a page fetches the shared bundle and its own route's chunks,
// never another page's, and a client-side navigation fetches the next page's chunks.
test('a page loads only its own wasm chunks, and the next page loads its chunks on navigation', async () => {
  const manifest = await (await fetch(`${server.baseUrl}/pkg/__wasm_split_manifest.json`)).json();
  const chunksOf = (route) => {
    const key = Object.keys(manifest).find((k) => k.startsWith(`__${route}_route_view_`));
    assert.ok(key, `the manifest has the ${route} route`);
    return manifest[key].map((chunk) => `${chunk}.wasm`);
  };
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer);
  await page.goto(`${server.baseUrl}/`);
  await waitForHydration(page);
  const fetched = () => page.evaluate(() => performance.getEntriesByType('resource')
    .map((e) => new URL(e.name).pathname)
    .filter((path) => path.endsWith('.wasm'))
    .map((path) => path.split('/').pop()));

  const onOverview = new Set(await fetched());
  assert.ok(onOverview.has('burnrate.wasm'), 'the shared bundle');
  for (const chunk of chunksOf('overview')) assert.ok(onOverview.has(chunk), `overview chunk ${chunk}`);
  const overviewChunks = new Set(chunksOf('overview'));
  const enforcementOnly = chunksOf('enforcement').filter((chunk) => !overviewChunks.has(chunk));
  assert.ok(enforcementOnly.length > 0, 'the Enforcement page has code of its own');
  for (const chunk of enforcementOnly) assert.ok(!onOverview.has(chunk), `enforcement chunk ${chunk} not fetched`);

  await page.evaluate(() => { window.__sameDocument = true; });
  await page.click('nav[aria-label="Main"] a[href="/teams"]');
  await page.waitForSelector('[data-testid="teams-table"]');
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'a client-side navigation');
  const afterTeams = new Set(await fetched());
  for (const chunk of chunksOf('teams')) assert.ok(afterTeams.has(chunk), `teams chunk ${chunk}`);
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors], []);
  await page.close();
});

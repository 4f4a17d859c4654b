// Budgets in Chromium: the list shows each budget's status, the form reports field errors
// beside their fields, a created budget opens on its own page with figures equal to the
// database, and a lead may only budget their own team.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, signIn, startServer, units, waitForHydration } from './harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

test('an admin creates a team budget and sees its status and spend', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.admin, '/budgets');
  await waitForHydration(page);
  // Sign-in navigates in the page: the Budgets page's code and data arrive after the menu.
  await page.waitForSelector('[data-testid="budget-row"]');
  const demoRows = await page.locator('[data-testid="budget-row"]').count();
  assert.equal(demoRows, 6, 'the demo has an org budget and five team budgets');
  const levels = await page.$$eval('[data-testid="budget-status"]', (els) => els.map((e) => e.dataset.level));
  for (const level of levels) assert.ok(['ok', 'warn', 'over'].includes(level), level);

  await page.click('[data-testid="new-budget"] summary');
  await page.fill('input[name="name"]', 'e2e ml budget');
  await page.selectOption('select[name="scope_kind"]', 'team');
  await page.fill('input[name="scope_name"]', 'ml-research');
  await page.fill('input[name="amount"]', '0');
  await page.fill('textarea[name="thresholds"]', '50\n80\n100\n100 forecasted');
  await page.click('button:text-is("Create budget")');
  await page.waitForSelector('[data-testid="error-amount"]');
  assert.match(await page.textContent('[data-testid="error-amount"]'), /greater than 0/);
  assert.equal(await page.locator('[data-testid="error-name"]').count(), 0, 'only the bad field is marked');

  await page.fill('input[name="amount"]', '1000.00');
  await page.click('button:text-is("Create budget")');
  await page.waitForURL(/\/budgets\/\d+$/);
  // The list stays on screen until the budget page's code has loaded, so wait for its heading.
  await page.waitForSelector('h1:text-is("e2e ml budget")');
  await page.waitForSelector('[data-testid="budget-spend"]');
  const { rows } = await server.db.query(
    `select coalesce(sum(a.unblended), 0)::text as spend from allocated_daily_costs a join teams t on t.id = a.team_id
     where t.name = 'ml-research' and a.day >= date_trunc('month', (now() at time zone 'utc'))::date`);
  const shown = await page.getAttribute('[data-testid="budget-spend"]', 'data-value');
  assert.equal(units(shown), units(rows[0].spend));
  // Demo spend for a month is far above USD 1,000, so the budget is over.
  assert.equal(await page.getAttribute('[data-testid="budget-status"]', 'data-level'), 'over');
  assert.ok(await page.locator('[data-testid="budget-chart"] svg').count() === 1);
  assert.match(await page.textContent('[data-testid="thresholds"]'), /100% forecasted/);

  await page.goto(`${server.baseUrl}/budgets`);
  await page.waitForSelector('[data-testid="budget-row"]');
  assert.equal(await page.locator('[data-testid="budget-row"]').count(), 7);
  // The refused first submission is a 400 from the server function, which the browser logs.
  const unexpected = problems.consoleErrors.filter((e) => !e.includes('400'));
  assert.deepEqual([...unexpected, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('a lead budgets only their own team; the server refuses another scope', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.lead, '/budgets');
  await waitForHydration(page);
  await page.click('[data-testid="new-budget"] summary');
  assert.equal(await page.locator('select[name="scope_kind"] option[value="org"]').count(), 0, 'no org option for a lead');
  await page.fill('input[name="name"]', 'lead tries inference');
  await page.fill('input[name="scope_name"]', 'inference');
  await page.fill('input[name="amount"]', '500');
  await page.click('button:text-is("Create budget")');
  await page.waitForSelector('[data-testid="form-error"]');
  assert.match(await page.textContent('[data-testid="form-error"]'), /not allowed/);
  const { rows } = await server.db.query("select count(*)::int as n from budgets where name = 'lead tries inference'");
  assert.equal(rows[0].n, 0);
  // The refusal is a 403 from the server function; the browser logs that failed request.
  const unexpected = problems.consoleErrors.filter((e) => !e.includes('403'));
  assert.deepEqual([...unexpected, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

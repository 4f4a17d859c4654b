// The first visit to `serve --demo` in Chromium: the admin's Overview lists the next steps,
// and every feature has something to show (approvals in force, expired and over their cap;
// violations in dry-run, awaiting approval and flagged; budgets at every status with alert
// history sent and queued), with charts whose legends sit below the plot and whose bars
// and points carry hover titles. With BURNRATE_SCREENSHOTS=DIR set it also saves the
// README's screenshots there.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openPage, signIn, startServer, waitForHydration } from './harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

const shots = process.env.BURNRATE_SCREENSHOTS;
async function screenshot(page, name) {
  if (shots) await page.screenshot({ path: join(shots, `${name}.png`), fullPage: false });
}

test('the demo shows every feature on the first visit, with next steps for the admin', async () => {
  const { page, problems } = await openPage(server.browser);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await signIn(page, server.baseUrl, server.accounts.admin, '/');
  await waitForHydration(page);

  // Next steps: nothing has been done yet, so all four are there.
  await page.waitForSelector('[data-testid="first-steps"]');
  for (const step of ['connect-aws', 'teams-as-code', 'set-budgets', 'review-violations']) {
    assert.equal(await page.locator(`[data-testid="step-${step}"]`).count(), 1, step);
  }
  assert.match(await page.textContent('[data-testid="iam-policy"]'), /ce:GetCostAndUsage/);
  // The recsys policy flags automatically: its project wears the badge on the Overview.
  await page.waitForSelector('[data-testid="flag-badge"]');
  // The burn chart: a legend below the plot, and a hover title on each point.
  const burnTitles = await page.locator('[data-testid="burn-chart"] svg .hover title').allTextContents();
  assert.ok(burnTitles.length > 5, `${burnTitles.length} hover titles`);
  assert.ok(burnTitles.some((t) => /Actual, cumulative: \$[\d,]+\.\d\d/.test(t)), burnTitles[0]);
  await screenshot(page, 'overview');

  // A team page: a stacked chart whose every series has a hover title per bar.
  await page.goto(`${server.baseUrl}/teams/ml-research`);
  await page.waitForSelector('[data-testid="gpu-hours"]');
  const gpuHours = await page.textContent('[data-testid="gpu-hours"]');
  assert.match(gpuHours.trim(), /^\d{1,3}(,\d{3})*(\.\d)?$/, `GPU-hours "${gpuHours}" with thousands separators`);
  const barTitles = await page.locator('figure.chart svg .hover title').allTextContents();
  assert.ok(barTitles.some((t) => /^\d{4}-\d\d-\d\d · llm-pretrain: \$[\d,]+\.\d\d/.test(t)), barTitles.slice(0, 3).join(' | '));
  await screenshot(page, 'team');

  // Budgets at every status.
  await page.goto(`${server.baseUrl}/budgets`);
  await page.waitForSelector('[data-testid="budget-row"]');
  const levels = await page.$$eval('[data-testid="budget-status"]', (els) => els.map((e) => e.dataset.level));
  assert.equal(levels.length, 6, levels.join());
  for (const level of ['ok', 'warn', 'over']) assert.ok(levels.includes(level), `${level} in ${levels.join()}`);
  await screenshot(page, 'budgets');

  // The ladder budget's history: last month's alerts sent, this month's queued for SMTP.
  const { rows: [ladder] } = await server.db.query("select id from budgets where name = 'ml-research monthly'");
  await page.goto(`${server.baseUrl}/budgets/${ladder.id}`);
  await page.waitForSelector('[data-testid="alert-history"]');
  const history = await page.textContent('[data-testid="alert-history"]');
  assert.match(history, /sent/);
  assert.match(history, /SMTP_URL is not set/);

  // Approvals: five, one of them expired.
  await page.goto(`${server.baseUrl}/approvals`);
  await page.waitForSelector('[data-testid="approval-row"]');
  const states = await page.$$eval('[data-testid="approval-row"] [data-testid="approval-state"]', (tds) => tds.map((td) => td.textContent));
  assert.equal(states.length, 5, states.join());
  assert.equal(states.filter((s) => s === 'expired').length, 1, states.join());

  // Enforcement: proposed in dry-run, awaiting an admin, executed flags; over a cap.
  await page.goto(`${server.baseUrl}/enforcement`);
  await waitForHydration(page);
  await page.waitForSelector('[data-testid="violation-row"]');
  const statuses = await page.$$eval('[data-testid="action"]', (els) => els.map((e) => e.dataset.status));
  for (const status of ['proposed', 'awaiting_approval', 'executed']) assert.ok(statuses.includes(status), `${status} in ${[...new Set(statuses)].join()}`);
  const reasons = await page.$$eval('[data-testid="violation-row"] td:nth-child(6)', (tds) => tds.map((td) => td.textContent));
  for (const reason of ['unapproved', 'approval expired', 'over cap']) assert.ok(reasons.includes(reason), `${reason} in ${[...new Set(reasons)].join()}`);
  await screenshot(page, 'enforcement');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('a next step goes once it is done, and a viewer sees none', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.admin, '/budgets');
  await waitForHydration(page);
  await page.click('[data-testid="new-budget"] summary');
  await page.fill('input[name="name"]', 'first visit budget');
  await page.selectOption('select[name="scope_kind"]', 'team');
  await page.fill('input[name="scope_name"]', 'search');
  await page.fill('input[name="amount"]', '25000.00');
  await page.fill('textarea[name="thresholds"]', '50\n80\n100');
  await page.click('button:text-is("Create budget")');
  await page.waitForURL(/\/budgets\/\d+$/);
  await page.goto(`${server.baseUrl}/`);
  await page.waitForSelector('[data-testid="first-steps"]');
  assert.equal(await page.locator('[data-testid="step-set-budgets"]').count(), 0, 'budgets are set');
  assert.equal(await page.locator('[data-testid="step-connect-aws"]').count(), 1, 'AWS is still to connect');
  await page.close();

  const viewer = await openPage(server.browser);
  await signIn(viewer.page, server.baseUrl, server.accounts.viewer, '/');
  await viewer.page.waitForSelector('[data-testid="burn-chart"]');
  assert.equal(await viewer.page.locator('[data-testid="first-steps"]').count(), 0, 'the steps are an admin\'s');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...viewer.problems.consoleErrors, ...viewer.problems.pageErrors], []);
  await viewer.page.close();
});

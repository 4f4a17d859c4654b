// Shared-cost rules in Chromium: an admin previews a rule, saves exactly what was previewed,
// and the Teams table moves as the preview said, adding up to the bill to the cent.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, signIn, startServer, units, waitForHydration } from './harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

/** Last calendar month as `YYYY-MM`, in UTC: the preview's default month. */
function lastMonth() {
  const now = new Date();
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
  return month.toISOString().slice(0, 7);
}

test('a rule is previewed, saved as previewed, and the Teams table moves as previewed', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.admin, '/admin/allocation');
  await waitForHydration(page);
  // The demo shares untagged NAT gateway, snapshot and tax spend; its untagged accelerator box is
  // left Unassigned until a rule takes it.
  await page.waitForSelector('[data-testid="rule-row"]');
  assert.match(await page.textContent('[data-testid="rules-table"]'), /Network, snapshots and tax/);

  const form = page.locator('[data-testid="rule-form"]').last();
  await form.locator('input[name="name"]').fill('Untagged leftovers');
  await form.locator('select[name="selector"]').selectOption('untagged');
  await form.locator('select[name="split"]').selectOption('fixed');
  await form.locator('textarea[name="teams"]').fill('ml-research 60\nvision 40');
  await form.locator('[data-testid="preview-rule"]').click();
  await page.waitForSelector('[data-testid="preview-row"]');
  const previewed = new Map(await page.$$eval('[data-testid="preview-row"]', (rows) => rows.map((r) => [
    r.querySelector('[data-testid="preview-team"]').textContent,
    r.querySelector('[data-testid="preview-proposed"]').dataset.value])));
  const { rows: [{ count }] } = await server.db.query("select count(*)::int as count from allocation_rules");
  assert.equal(count, 1, 'a preview saves nothing');
  // The rule moves spend from Unassigned to the two teams.
  const { rows: before } = await server.db.query(
    `select coalesce(t.name, 'Unassigned') as team, sum(a.unblended)::text as spend
     from allocated_daily_costs a left join teams t on t.id = a.team_id
     where a.day >= $1::date and a.day < ($1::date + interval '1 month') group by 1`, [`${lastMonth()}-01`]);
  const was = new Map(before.map((r) => [r.team, units(r.spend)]));
  assert.ok(units(previewed.get('Unassigned')) < was.get('Unassigned'), 'Unassigned shrinks');
  assert.ok(units(previewed.get('vision')) > was.get('vision'), 'vision grows');

  await page.click('[data-testid="save-rule"]');
  await page.waitForSelector('[data-testid="rule-row"]:nth-child(2)');
  assert.match(await page.textContent('[data-testid="rules-table"]'), /Untagged leftovers/);

  await page.goto(`${server.baseUrl}/teams?period=${lastMonth()}`);
  await page.waitForSelector('[data-testid="team-row"]');
  const shown = await page.$$eval('[data-testid="team-row"]', (rows) => rows.map((row) => [
    row.querySelector('[data-testid="team-name"]').textContent,
    row.querySelector('[data-testid="team-spend"]').dataset.value]));
  for (const [team, spend] of shown) assert.equal(units(spend), units(previewed.get(team)), team);
  const listed = new Set(shown.map(([team]) => team));
  for (const [team, spend] of previewed) if (!listed.has(team)) assert.equal(units(spend), 0n, `${team} left the table`);
  const { rows: [bill] } = await server.db.query(
    `select sum(unblended)::text as spend from costs_by_usage_type
     where day >= $1::date and day < ($1::date + interval '1 month')`, [`${lastMonth()}-01`]);
  const total = await page.getAttribute('[data-testid="teams-total"]', 'data-value');
  assert.equal(units(total), units(bill.spend), 'the teams and Unassigned add up to the bill');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('the Statements page links each month as CSV and as a printable page that adds up to the bill', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/statements');
  await waitForHydration(page);
  await page.waitForSelector('[data-testid="statement-row"]');
  const month = lastMonth();
  const row = page.locator('[data-testid="statement-row"]', { hasText: month });
  assert.equal(await row.locator('a', { hasText: 'CSV' }).getAttribute('href'), `/api/statement?month=${month}&format=csv`);
  await page.selectOption('[data-testid="statement-team"]', 'ml-research');
  const teamHref = `/api/statement?month=${month}&format=csv&team=ml-research`;
  await row.locator(`a[href="${teamHref}"]`).waitFor();

  const csv = await page.evaluate(async () => {
    const month = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
    return (await fetch(`/api/statement?month=${month}&format=csv`)).text();
  });
  const lines = csv.trim().split('\n');
  assert.equal(lines[0], 'month,team,section,item,unblended,amortized');
  const totals = lines.slice(1).map((l) => l.split(',')).filter((c) => c[2] === 'total');
  const teams = new Set(lines.slice(1).map((l) => l.split(',')[1]));
  assert.equal(totals.length, teams.size, 'exactly one total per team');
  const { rows: [bill] } = await server.db.query(
    `select sum(unblended)::text as spend from costs_by_usage_type
     where day >= $1::date and day < ($1::date + interval '1 month')`, [`${month}-01`]);
  assert.equal(totals.reduce((sum, c) => sum + units(c[4]), 0n), units(bill.spend), 'the teams add up to the bill');

  // The printable form: its own style applies under its Content-Security-Policy (a
  // refused style would be a console error, which `problems` collects).
  await page.goto(`${server.baseUrl}/api/statement?month=${month}&format=html&team=ml-research`);
  assert.equal(await page.textContent('h1'), `Chargeback statement, ${month}`);
  assert.equal(await page.evaluate(() => getComputedStyle(document.querySelector('table')).borderCollapse), 'collapse');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

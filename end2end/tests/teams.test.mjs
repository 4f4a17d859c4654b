// The Teams, Team and Project pages in Chromium: one chart series per team, the table
// toggle's numbers equal the database, filters in the URL, drill-down links, no XSS.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, signIn, startServer, units, waitForHydration } from './harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

test('the team chart has one legend entry per team and its table equals the database', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/teams?period=30d');
  await waitForHydration(page);
  // Sign-in navigates client-side, so the table arrives after hydration: wait for it.
  await page.waitForSelector('[data-testid="team-name"]');
  const teams = await page.$$eval('[data-testid="team-name"]', (cells) => cells.map((c) => c.textContent));
  assert.ok(teams.length >= 10, teams.join());
  const svgText = await page.$$eval('[data-testid="teams-chart"] svg text', (nodes) => nodes.map((n) => n.textContent.trim()));
  for (const team of teams) assert.ok(svgText.includes(team), `legend names ${team}`);
  assert.equal(await page.locator('[data-testid="teams-chart"] svg > title').textContent().then((t) => t.startsWith('Daily spend by team')), true);

  await page.click('details.chart-table summary');
  const cells = await page.$$eval('[data-testid="chart-row"]', (rows) => rows.map((r) => [
    r.children[0].textContent, r.children[1].textContent, r.children[2].dataset.value]));
  const caption = await page.textContent('[data-testid="teams-table"] caption');
  const [from, last] = caption.match(/\d{4}-\d{2}-\d{2}/g);
  const { rows } = await server.db.query(
    `select a.day::text as day, coalesce(t.name, 'Unassigned') as team, sum(a.unblended)::text as spend
     from allocated_daily_costs a left join teams t on t.id = a.team_id
     where a.day between $1 and $2 group by 1, 2`, [from, last]);
  const expected = new Map(rows.map((r) => [`${r.day}|${r.team}`, units(r.spend)]));
  assert.equal(cells.length, expected.size);
  for (const [day, team, value] of cells) assert.equal(units(value), expected.get(`${day}|${team}`), `${day} ${team}`);

  // The demo, like Cost Explorer, ends yesterday and flags the whole open bill Estimated;
  // only the days inside the restatement window of its last load are provisional. The table marks
  // each kind, the chart's legend and the notes under the table say so.
  const { rows: estimated } = await server.db.query(
    `select distinct day::text as day, day >= (select window_from from settlement) as provisional
     from daily_project_costs where estimated and day between $1 and $2 order by 1`, [from, last]);
  const provisional = estimated.filter((r) => r.provisional).map((r) => r.day);
  const billOpen = estimated.filter((r) => !r.provisional).map((r) => r.day);
  assert.ok(provisional.length >= 1 && provisional.length <= 3, `provisional ${provisional}`);
  assert.equal(last, provisional.at(-1), 'the period ends on the last (provisional) day: yesterday');
  const marked = (label) => page.$$eval('[data-testid="chart-row"]', (rows, label) => [...new Set(rows
    .filter((r) => r.children[3].textContent === label).map((r) => r.children[0].textContent))].sort(), label);
  assert.deepEqual(await marked('Provisional'), provisional);
  assert.deepEqual(await marked('Bill open'), billOpen);
  assert.ok(svgText.some((t) => t.includes('provisional days')), 'the chart legend names provisional days');
  assert.match(await page.textContent('[data-testid="provisional-legend"]'), /Provisional: .* may restate them/);
  if (billOpen.length > 0) {
    assert.match(await page.textContent('[data-testid="bill-open-legend"]'), /Bill open: .* count as settled/);
  }

  await page.click('[data-testid="metric-amortized"]');
  await page.waitForURL(/metric=amortized/);
  await page.goBack();
  await page.waitForURL((url) => !url.search.includes('amortized'));
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('the credits switch shows every team before credits, as the database has them, and keeps the period', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/teams?period=prev');
  await waitForHydration(page);
  await page.waitForSelector('[data-testid="team-name"]');
  const read = () => page.$$eval('[data-testid="team-name"]', (cells) => Object.fromEntries(cells.map((c) => [
    c.textContent, c.closest('tr').querySelector('[data-testid="team-spend"]').dataset.value])));
  const net = await read();
  assert.match(await page.textContent('[data-testid="teams-table"] caption'), /net of credits and refunds/);
  await page.click('[data-testid="credits-gross"]');
  await page.waitForURL(/credits=gross/);
  assert.match(page.url(), /period=prev/, 'the period stays');
  await page.waitForFunction(() => document.querySelector('[data-testid="teams-table"] caption')?.textContent.includes('before credits'));
  const gross = await read();
  const caption = await page.textContent('[data-testid="teams-table"] caption');
  const [from, last] = caption.match(/\d{4}-\d{2}-\d{2}/g);
  const { rows } = await server.db.query(
    `select coalesce(t.name, 'Unassigned') as team, sum(a.unblended)::text as net,
            sum(a.unblended - a.credit_unblended - a.refund_unblended)::text as gross
     from allocated_daily_costs a left join teams t on t.id = a.team_id
     where a.day between $1 and $2 group by 1`, [from, last]);
  let moved = 0;
  for (const row of rows) {
    assert.equal(units(net[row.team]), units(row.net), `${row.team} net`);
    assert.equal(units(gross[row.team]), units(row.gross), `${row.team} before credits`);
    if (row.net !== row.gross) moved += 1;
  }
  // The demo's monthly credit on llm-pretrain and the untagged refund on the 15th.
  assert.ok(moved >= 1, 'some team had credits last month');
  await page.click('[data-testid="credits-net"]');
  await page.waitForURL((url) => !url.search.includes('credits=gross'));
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('a project page before credits says which breakdowns still include them', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/projects/llm-pretrain?period=prev&credits=gross');
  await waitForHydration(page);
  await page.waitForSelector('[data-testid="credits-note"]');
  assert.match(await page.textContent('[data-testid="credits-note"]'), /Users, services, GPU families and workloads still include them/);
  const total = await page.getAttribute('[data-testid="scope-total"]', 'data-value');
  const { rows } = await server.db.query(
    `select sum(unblended - credit_unblended - refund_unblended)::text as gross from daily_project_costs
     where project = 'llm-pretrain'
       and day >= date_trunc('month', (now() at time zone 'utc')::date - interval '1 month')
       and day < date_trunc('month', (now() at time zone 'utc')::date)`);
  assert.equal(units(total), units(rows[0].gross));
  await page.click('[data-testid="credits-net"]');
  await page.waitForURL((url) => !url.search.includes('credits=gross'));
  await page.waitForFunction(() => !document.querySelector('[data-testid="credits-note"]'));
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('a team links to its projects; the hostile project renders as text and runs nothing', async () => {
  const { rows } = await server.db.query(
    "select t.name from projects p join teams t on t.id = p.team_id where p.name = '<img src=x onerror=alert(1)>'");
  const team = rows[0].name;
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/teams?period=90d');
  await waitForHydration(page);
  await page.click(`[data-testid="team-name"]:text-is("${team}")`);
  await page.waitForSelector('[data-testid="by-project"]');
  assert.equal(await page.textContent('h1'), `Team ${team}`);
  await page.click('[data-testid="by-project-row"] a:text-is("<img src=x onerror=alert(1)>")');
  await page.waitForURL(/\/projects\//);
  await page.waitForSelector('[data-testid="scope-total"]');
  assert.equal(await page.textContent('h1'), 'Project <img src=x onerror=alert(1)>');
  assert.equal(await page.locator('img').count(), 0);
  const legend = await page.$$eval('[data-testid="scope-chart"] svg text', (nodes) => nodes.map((n) => n.textContent.trim()));
  assert.ok(legend.includes('<img src=x onerror=alert(1)>'), 'the legend shows the name as text');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('the month picker and the range form change the URL and the figures without a reload', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/teams?period=30d');
  await waitForHydration(page);
  await page.evaluate(() => { window.__sameDocument = true; });
  const { rows } = await server.db.query(
    "select to_char(date_trunc('month', min(day)) + interval '1 month', 'YYYY-MM') as month from daily_project_costs");
  const month = rows[0].month;
  await page.fill('[data-testid="month-form"] input[name="month"]', month);
  await page.click('[data-testid="month-form"] button[type="submit"]');
  await page.waitForURL(new RegExp(`month=${month}`));
  await page.waitForFunction((m) => document.querySelector('[data-testid="teams-table"] caption')?.textContent.includes(`${m}-01 – `), month);
  const caption = await page.textContent('[data-testid="teams-table"] caption');
  const [from, last] = caption.match(/\d{4}-\d{2}-\d{2}/g);
  const shown = await page.$$eval('[data-testid="team-spend"]', (cells) => cells.map((c) => c.dataset.value));
  const { rows: totals } = await server.db.query(
    'select sum(unblended)::text as total from daily_project_costs where day between $1 and $2', [from, last]);
  const sum = shown.reduce((acc, v) => acc + units(v), 0n);
  assert.equal(sum, units(totals[0].total));

  await page.fill('[data-testid="range-form"] input[name="from"]', from);
  await page.fill('[data-testid="range-form"] input[name="to"]', from);
  await page.click('[data-testid="range-form"] button[type="submit"]');
  await page.waitForURL(/from=/);
  await page.waitForFunction((d) => document.querySelector('[data-testid="teams-table"] caption')?.textContent.includes(`${d} – ${d}`), from);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no full page load');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('a server-rendered Team page keeps its chart and rows through hydration and rebuilds them on a filter change', async () => {
  const { rows: [{ name: team }] } = await server.db.query(
    'select t.name from teams t join projects p on p.team_id = t.id group by 1 order by count(*) desc limit 1');
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/');
  // A full load: the page arrives rendered and hydrates.
  await page.goto(`${server.baseUrl}/teams/${encodeURIComponent(team)}?period=30d`);
  await waitForHydration(page);
  const chartTitle = () => page.locator('[data-testid="scope-chart"] svg > title').textContent();
  assert.ok((await chartTitle()).startsWith(`Daily spend of ${team}`));
  assert.ok(await page.locator('[data-testid="by-project-row"]').count() > 0);
  // The chart is in the HTML once: the hydration data leaves it out.
  const scriptsWithChart = await page.$$eval('script', (scripts) => scripts.filter((s) => s.textContent.includes('viewBox')).length);
  assert.equal(scriptsWithChart, 0);

  // A client-side filter change rebuilds chart and rows from the server function's data.
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.click('[data-testid="metric-amortized"]');
  await page.waitForURL(/metric=amortized/);
  // The new data has arrived when the breakdowns' CSV links name the new metric.
  await page.waitForSelector('.breakdown a[download][href*="metric=amortized"]');
  assert.ok((await chartTitle()).startsWith(`Daily spend of ${team}`));
  const hint = await page.textContent('[data-testid="scope-total"] + .hint');
  const [from, last] = hint.match(/\d{4}-\d{2}-\d{2}/g);
  const [project, value] = await page.$eval('[data-testid="by-project-row"]', (row) => [
    row.querySelector('a').getAttribute('href'), row.children[1].dataset.value]);
  const { rows: [{ spend }] } = await server.db.query(
    'select sum(amortized)::text as spend from costs_by_service where project = $1 and day between $2 and $3',
    [decodeURIComponent(project.replace('/projects/', '')), from, last]);
  assert.equal(units(value), units(spend));
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no full page load');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

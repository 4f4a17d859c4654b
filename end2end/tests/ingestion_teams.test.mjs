// Ingestion status of a demo without AWS settings, the CSV download against `burnrate export`, and
// assigning an unassigned project on the Teams admin page, in Chromium.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { burnrateCli, openPage, signIn, startServer, waitForHydration } from './harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

// The harness serves the demo with no AWS settings: scheduled ingestion is off, and the
// Ingestion page says so and how to connect AWS, as a note rather than a problem.
test('the Ingestion page of a demo without AWS settings says how to connect AWS', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/ingestion');
  await page.goto(`${server.baseUrl}/ingestion`);
  const status = await page.textContent('[data-testid="schedule-status"]');
  assert.match(status, /Demo without AWS settings: scheduled ingestion is off/);
  assert.match(status, /AWS_PROFILE/);
  assert.match(status, /burnrate ingest/);
  assert.equal(await page.getAttribute('[data-testid="schedule-status"]', 'class'), 'notice');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('the team table downloads the same CSV as burnrate export', async () => {
  const { page } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/?period=prev');
  await waitForHydration(page);
  const href = await page.getAttribute('[data-testid="team-csv"]', 'href');
  const params = new URL(href, server.baseUrl).searchParams;
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-testid="team-csv"]'),
  ]);
  const stream = await download.createReadStream();
  let body = '';
  for await (const chunk of stream) body += chunk;
  const expected = await burnrateCli(server.databaseUrl, [
    'export', '--from', params.get('from'), '--to', params.get('to'), '--group-by', 'team', '--metric', params.get('metric'),
  ]);
  assert.ok(body.startsWith('date,team,cost\n'), body.slice(0, 80));
  assert.equal(body, expected);
  await page.close();
});

test('an admin assigns an unassigned project to a team; hostile names stay text', async () => {
  await server.db.query("insert into projects (name) values ('orphan-e2e'), ('<svg onload=alert(2)>') on conflict do nothing");
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.admin, '/admin/teams');
  await waitForHydration(page);
  const row = page.locator('[data-testid="unmapped-row"]', { hasText: 'orphan-e2e' });
  await row.locator('select[name="team"]').selectOption({ index: 0 });
  const team = await row.locator('select[name="team"]').inputValue();
  await row.locator('button[type="submit"]').click();
  await page.locator('[data-testid="unmapped-row"]', { hasText: 'orphan-e2e' }).waitFor({ state: 'detached' });
  const { rows } = await server.db.query(
    "select t.name from projects p join teams t on t.id = p.team_id where p.name = 'orphan-e2e'");
  assert.equal(rows[0]?.name, team);
  assert.ok(await page.locator('[data-testid="unmapped-row"]', { hasText: '<svg onload=alert(2)>' }).count() === 1);
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

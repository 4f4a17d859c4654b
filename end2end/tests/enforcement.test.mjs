// Enforcement in Chromium: an admin switches the org policy to manual, a violation appears
// after `burnrate enforce evaluate`, the admin approves its flag, the badge and the audit log
// show it, and once the project is approved the flag is lifted by itself.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { burnrateCli, openPage, signIn, startServer, waitForHydration } from './harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

test('a manual flag is approved, audited, shown, and lifted by itself once the project is approved', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.admin, '/enforcement');
  await waitForHydration(page);

  // The org default becomes manual, flag only.
  await page.click('[data-testid="policy-form"] summary');
  await page.fill('[data-testid="policy-form"] input[name="limit"]', '1000.00');
  await page.uncheck('[data-testid="policy-form"] input[name="notify"]');
  await page.selectOption('[data-testid="policy-form"] select[name="mode"]', 'manual');
  await page.click('button:text-is("Save policy")');
  await page.waitForSelector('[data-testid="policy-mode"]:text-is("manual")');

  const csv = await burnrateCli(server.databaseUrl, ['enforce', 'evaluate']);
  const [header, ...lines] = csv.trim().split('\n');
  assert.equal(header, 'project,team,period_start,spend,limit,reason,action,mode,status');
  // The demo's evaluation already proposed the org default's actions in dry-run; switched
  // to manual, its flags now await approval.
  assert.ok(lines.some((line) => /,flag,manual,awaiting_approval$/.test(line)), lines.join('\n'));
  const { rows } = await server.db.query(
    `select a.id, v.project from enforcement_actions a join violations v on v.id = a.violation_id
       left join projects p on p.name = v.project left join teams t on t.id = p.team_id
     where a.action = 'flag' and a.status = 'awaiting_approval' and v.project <> '<img src=x onerror=alert(1)>'
       and t.name not in ('vision', 'recsys')
     order by v.spend desc limit 1`);
  const { id, project } = rows[0];

  await page.reload();
  await waitForHydration(page);
  await page.click(`[data-testid="approve-${id}"]`);
  await page.waitForSelector(`[data-testid="action"][data-id="${id}"][data-status="executed"]`);
  const events = await page.$$eval('[data-testid="audit-row"]', (trs) => trs.map((tr) => tr.dataset.event));
  assert.ok(events.includes('approved') && events.includes('executed'), events.join());
  const { rows: audit } = await server.db.query(
    "select event, actor from enforcement_audit where action_id = $1 order by id", [id]);
  // Proposed in dry-run by the demo's evaluation, disarmed when the policy left dry-run
  // (manual waits for an admin), then approved and executed.
  assert.deepEqual(audit.map((r) => r.event), ['proposed', 'disarmed', 'approved', 'executed']);
  assert.equal(audit[2].actor, server.accounts.admin.email);

  // The flag shows on the Overview.
  await page.goto(`${server.baseUrl}/`);
  await page.waitForSelector('[data-testid="flag-badge"]');
  assert.ok((await page.textContent('[data-testid="flag-badge"]')).includes(project));

  // Approving the project afterwards lifts the flag.
  await page.goto(`${server.baseUrl}/approvals`);
  await waitForHydration(page);
  await page.click('[data-testid="new-approval"] summary');
  await page.fill('[data-testid="new-approval"] input[name="project"]', project);
  await page.fill('[data-testid="new-approval"] input[name="reason"]', 'Q4 foundation model run');
  await page.fill('[data-testid="new-approval"] input[name="cap"]', '9999999.00');
  await page.fill('[data-testid="new-approval"] input[name="expires"]', '2099-12-31');
  await page.click('button:text-is("Save approval")');
  // The demo's approvals are listed too (each with a hidden project field for Revoke).
  await page.waitForSelector(`[data-testid="approval-row"]:has-text("${project}")`);

  // The approval woke the enforcement loop, which lifts the flag by itself: no longer
  // justified, it is removed, disarmed and reversed in the action trail by the system.
  let reversed = false;
  for (let look = 0; look < 20 && !reversed; look += 1) {
    await page.goto(`${server.baseUrl}/enforcement`);
    await waitForHydration(page);
    reversed = (await page.locator(`[data-testid="action"][data-id="${id}"][data-status="reversed"]`).count()) > 0;
    if (!reversed) await new Promise((resolve) => setTimeout(resolve, 500));
  }
  assert.ok(reversed, 'the flag was lifted once the project was approved');
  const { rows: last } = await server.db.query(
    "select event, actor from enforcement_audit where action_id = $1 order by id desc limit 2", [id]);
  assert.deepEqual(last.map((r) => [r.event, r.actor]), [['reversed', 'system'], ['disarmed', 'system']]);

  await page.goto(`${server.baseUrl}/`);
  await page.waitForSelector('[data-testid="burn-chart"], [data-testid="empty-state"], h1');
  // The demo's recsys project keeps its own flag; this project's is gone.
  const badges = await page.locator('[data-testid="flag-badge"]').allTextContents();
  assert.ok(badges.every((badge) => !badge.includes(project)), badges.join());
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('a lead requests an approval, an admin approves it with another cap, and the page shows it against its cap', async () => {
  const { rows } = await server.db.query(
    `select p.name from projects p join teams t on t.id = p.team_id
     where t.name = 'ml-research'
       and not exists (select 1 from approvals a where a.project = p.name and a.ended_at is null)
     order by p.name limit 1`);
  const project = rows[0].name;
  const until = new Date(Date.now() + 20 * 86_400_000).toISOString().slice(0, 10);

  const lead = await openPage(server.browser);
  await signIn(lead.page, server.baseUrl, server.accounts.lead, '/approvals');
  await waitForHydration(lead.page);
  await lead.page.click('[data-testid="request-approval"] summary');
  await lead.page.fill('[data-testid="request-approval"] input[name="project"]', project);
  await lead.page.fill('[data-testid="request-approval"] input[name="cap"]', '25000');
  await lead.page.fill('[data-testid="request-approval"] input[name="until"]', until);
  await lead.page.fill('[data-testid="request-approval"] input[name="reason"]', 'Q1 launch fine-tune');
  await lead.page.click('button:text-is("Request approval")');
  await lead.page.waitForSelector(`[data-testid="request-row"][data-status="pending"][data-project="${project}"]`);
  assert.equal(await lead.page.locator('[data-testid="approve-request"]').count(), 0, 'a lead does not decide');

  const admin = await openPage(server.browser);
  await signIn(admin.page, server.baseUrl, server.accounts.admin, '/approvals');
  await waitForHydration(admin.page);
  const request = admin.page.locator(`[data-testid="request-row"][data-project="${project}"]`);
  await request.locator('input[name="cap"]').fill('20000');
  await request.locator('button:text-is("Approve")').click();
  await admin.page.waitForSelector(`[data-testid="request-row"][data-status="approved"][data-project="${project}"]`);

  // In force at once, with the admin as approver, shown against its cap with its days left.
  const approval = admin.page.locator(`[data-testid="approval-row"]:has-text("${project}")`);
  await approval.waitFor();
  assert.ok((await approval.textContent()).includes(server.accounts.admin.email));
  assert.ok((await approval.textContent()).includes('$20,000.00'));
  assert.equal((await approval.locator('[data-testid="approval-days-left"]').textContent()).trim(), '21');
  assert.match(await approval.locator('[data-testid="approval-used"]').textContent(), /^\d+ %$/);
  const { rows: stored } = await server.db.query(
    'select approver, cap::text, expires::text from approvals where project = $1 and ended_at is null', [project]);
  assert.deepEqual(stored, [{ approver: server.accounts.admin.email, cap: '20000.00', expires: until }]);

  // The lead sees the decision.
  await lead.page.reload();
  await waitForHydration(lead.page);
  const decided = lead.page.locator(`[data-testid="request-row"][data-project="${project}"]`);
  assert.equal(await decided.getAttribute('data-status'), 'approved');
  assert.ok((await decided.textContent()).includes(`approved by ${server.accounts.admin.email}`));
  for (const { problems } of [lead, admin]) {
    assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  }
  await lead.page.close();
  await admin.page.close();
});

// The Savings page lists the demo's opportunities with the database's amounts, accepting
// one writes the audit log, and the what-if calculator answers without a page reload.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { openPage, signIn, startServer, units, waitForHydration } from './harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

/** `$1,234.56` from an exact amount in 1e-10 dollars, half away from zero. */
function usd(tenBillionths) {
  const cents = (tenBillionths + 50_000_000n) / 100_000_000n;
  const whole = (cents / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `$${whole}.${(cents % 100n).toString().padStart(2, '0')}`;
}

test('the Savings page lists the demo anti-patterns at the amounts the database gives', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/savings');
  await waitForHydration(page);
  // Sign-in ends in a client-side navigation: the page's data arrives after hydration.
  await page.waitForSelector('[data-testid="savings-row"]');
  const kinds = await page.$$eval('[data-testid="savings-row"]', (rows) => rows.map((r) => r.dataset.kind));
  for (const kind of ['spot', 'rightsize', 'always_on', 'commitment']) assert.ok(kinds.includes(kind), `${kind} in ${kinds}`);

  // The notebook that never stops: its spend over the last 30 settled days × 108/168
  // (settled: older than the last load's restatement window, or off the open bill).
  const { rows: [window] } = await server.db.query(
    `select min(day)::text as from, (max(day) + 1)::text as to from (
       select distinct day from daily_project_costs
       where not estimated or day < (select window_from from settlement) order by day desc limit 30) d`);
  const { rows: [basis] } = await server.db.query(
    `select sum(unblended)::text as spend from costs_by_usage_type
     where project = 'moe-experiments' and usage_type = 'USE1-Notebk:ml.g5.12xlarge' and day >= $1 and day < $2`,
    [window.from, window.to]);
  const expected = usd((units(basis.spend) * 108n) / 168n);
  const row = page.locator('[data-testid="savings-row"][data-kind="always_on"]', { hasText: 'moe-experiments' });
  assert.equal((await row.locator('[data-testid="monthly-saving"]').textContent()).trim(), expected);

  // Ranked by monthly saving.
  const amounts = await page.$$eval('[data-testid="monthly-saving"]',
    (cells) => cells.map((c) => Number(c.textContent.replace(/[$,]/g, ''))));
  assert.deepEqual([...amounts].sort((a, b) => b - a), amounts);

  // The Overview says how much is available, once the page has hydrated.
  await page.goto(`${server.baseUrl}/`);
  await waitForHydration(page);
  const available = await page.locator('[data-testid="savings-available"]').textContent({ timeout: 30_000 });
  assert.match(available, /Savings available: \$[\d,]+\.\d{2} a month in \d{1,3}(,\d{3})* GPU recommendations/);
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('an admin accepts a recommendation and the audit log records who and why', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.admin, '/savings?kind=rightsize');
  await waitForHydration(page);
  const row = page.locator('[data-testid="savings-row"]', { hasText: 'chat-serving' }).first();
  // The decision is a compact control: its form opens on demand.
  await row.locator('[data-testid="decide-open"]').click();
  const form = row.locator('[data-testid="decide-form"]');
  await form.locator('select[name="decision"]').selectOption('accepted');
  await form.locator('input[name="reason"]').fill('moving the 7B model to one L4');
  await form.locator('button[type="submit"]').click();
  await page.locator('[data-testid="savings-row"]', { hasText: 'chat-serving' }).first()
    .locator('[data-testid="decision"]', { hasText: 'Accepted: moving the 7B model' }).waitFor();
  let audited = [];
  for (let attempt = 0; attempt < 20 && audited.length === 0; attempt += 1) {
    ({ rows: audited } = await server.db.query(
      "select actor, details->>'reason' as reason from audit_log where action = 'savings.accepted'"));
    if (audited.length === 0) await sleep(250);
  }
  assert.deepEqual(audited, [{ actor: server.accounts.admin.email, reason: 'moving the 7B model to one L4' }]);
  assert.ok((await page.textContent('[data-testid="ledger-accepted"]')).startsWith('$'));
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('at 1400 px a recommendation reads on one or two lines, and at 390 px it is a card', async () => {
  const { page, problems } = await openPage(server.browser);
  await page.setViewportSize({ width: 1400, height: 900 });
  await signIn(page, server.baseUrl, server.accounts.admin, '/savings');
  await waitForHydration(page);
  await page.waitForSelector('[data-testid="savings-row"]');

  // The headline: the total, how many rows it sums, and what summing means.
  const headline = (await page.textContent('[data-testid="savings-headline"]')).replace(/\s+/g, ' ');
  const proposed = (await page.textContent('[data-testid="ledger-proposed"]')).trim();
  // Every row is on the page (the demo has fewer than 200), an earlier test accepted one;
  // rows resting on an inferred workload are summed apart until a lead confirms it.
  const open = await page.locator('[data-testid="savings-row"]:not(:has([data-testid="inferred"])) .decision-status', { hasText: /^Open$/ }).count();
  assert.ok(open > 1);
  assert.ok(headline.startsWith(`${proposed} a month could be saved across ${open} open recommendations.`), headline);
  assert.match(headline, /compounded/);

  // What runs now is said in words; the usage type itself is in the evidence.
  const notebook = page.locator('[data-testid="savings-row"][data-kind="always_on"]', { hasText: 'moe-experiments' });
  assert.equal((await notebook.locator('[data-testid="runs-now"]').textContent()).trim(),
    'ml.g5.12xlarge notebook, on-demand, 4 GPUs');
  assert.equal(await notebook.locator('[data-testid="usage-type"]').isVisible(), false, 'evidence folded');
  await notebook.locator('details.why > summary').click();
  assert.equal((await notebook.locator('[data-testid="usage-type"]').textContent()).trim(), 'USE1-Notebk:ml.g5.12xlarge');
  await notebook.locator('details.why > summary').click();

  // Every row's content is at most two lines high (the cells share the row's height).
  const tall = await page.$$eval('[data-testid="savings-row"]', (trs) => trs.flatMap((tr) => {
    const td = tr.querySelector('td[data-label="Recommended"]');
    const style = getComputedStyle(td);
    const line = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);
    const content = tr.getBoundingClientRect().height - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
    return content > 2 * line + 6 ? [`${tr.textContent.slice(0, 80)}: ${Math.round(content)}px, a line is ${line}px`] : [];
  }));
  assert.deepEqual(tall, []);

  // On a phone each recommendation is a card: its cells stack, each named by its column.
  await page.setViewportSize({ width: 390, height: 844 });
  const cards = await page.$$eval('[data-testid="savings-row"]', (trs) => trs.slice(0, 5).map((tr) => ({
    display: getComputedStyle(tr).display,
    fits: tr.getBoundingClientRect().right <= window.innerWidth,
    label: getComputedStyle(tr.querySelector('td[data-label="Saving a month"]'), '::before').content,
  })));
  for (const card of cards) {
    assert.deepEqual({ display: card.display, fits: card.fits }, { display: 'block', fits: true });
    assert.match(card.label, /Saving a month/);
  }
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('the what-if calculator computes without a page reload', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/what-if');
  await waitForHydration(page);
  await page.waitForSelector('[data-testid="what-if-form"]');
  await page.evaluate(() => { window.__stillTheSamePage = true; });
  await page.fill('input[name="params_b"]', '7');
  await page.selectOption('select[name="workload"]', 'serving');
  await page.fill('input[name="tokens_per_day"]', '20000000');
  await page.click('[data-testid="what-if-submit"]');
  await page.locator('[data-testid="what-if-need"]', { hasText: '15.6 GiB' }).waitFor();
  assert.equal(await page.evaluate(() => window.__stillTheSamePage), true, 'no full reload');
  assert.match(page.url(), /params_b=7/);
  assert.equal((await page.textContent('[data-testid="what-if-fits"] [data-testid="what-if-row"] code')).trim(), 'g6.xlarge');
  assert.equal((await page.textContent('[data-testid="managed-monthly"]')).trim(), '$1,800.00');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

/** Cents from `$12,345.67`. */
function cents(text) {
  const match = /\$([\d,]+)\.(\d{2})/.exec(text);
  assert.ok(match, `a dollar amount in ${text}`);
  return Number(match[1].replace(/,/g, '')) * 100 + Number(match[2]);
}

test('a lead confirms a workload inferred from the bill, and the Overview total grows by its rows', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.lead, '/');
  await waitForHydration(page);
  const figure = async () => cents(await page.locator('[data-testid="savings-available-figure"]').textContent({ timeout: 30_000 }));
  const before = await figure();
  // The demo's rlhf-eval declares nothing: its weekly two-day sweeps read as training.
  assert.match(await page.textContent('[data-testid="savings-to-confirm"]'), /resting on workloads inferred from the bill/);

  await page.goto(`${server.baseUrl}/savings`);
  await waitForHydration(page);
  const inferredRows = () => page.locator('[data-testid="savings-row"]', { hasText: 'rlhf-eval', has: page.locator('[data-testid="inferred"]') });
  await inferredRows().first().waitFor();
  const adds = (await inferredRows().locator('[data-testid="compounded-saving"]').allTextContents()).map(cents);
  assert.ok(adds.length >= 1 && adds.every((c) => c > 0), `${adds}`);
  const inferred = inferredRows().first().locator('[data-testid="inferred"]');
  assert.equal(await inferred.getAttribute('data-confidence'), 'medium');
  await inferred.locator('summary').click();
  assert.match(await inferred.textContent(), /inferred: bursty runs of \d+(–\d+)? h/);
  // One click: the inferred workload is already chosen.
  const form = inferred.locator('[data-testid="confirm-workload"]');
  assert.equal(await form.locator('select[name="workload"]').inputValue(), 'training');
  await form.locator('button[type="submit"]').click();
  for (let attempt = 0; attempt < 40 && (await inferredRows().count()) > 0; attempt += 1) await sleep(250);
  assert.equal(await inferredRows().count(), 0, 'its rows rest on a declared workload now');
  const { rows: audited } = await server.db.query(
    "select actor, details->'after'->>'workload' as workload from audit_log where action = 'project.workload' and subject = 'rlhf-eval'");
  assert.deepEqual(audited, [{ actor: server.accounts.lead.email, workload: 'training' }]);

  // The capped total now counts them: up by what they add after the rows before them
  // (each shown rounded to the cent, so within a cent a row).
  await page.goto(`${server.baseUrl}/`);
  await waitForHydration(page);
  const expected = before + adds.reduce((a, b) => a + b, 0);
  let after = await figure();
  for (let attempt = 0; attempt < 20 && Math.abs(after - expected) > adds.length; attempt += 1) {
    await sleep(250);
    after = await figure();
  }
  assert.ok(Math.abs(after - expected) <= adds.length, `before ${before}, rows ${adds}, after ${after}`);
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

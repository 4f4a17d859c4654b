// GPU utilisation on the Savings page from a real Prometheus holding DCGM series: the
// counter each GPU was judged by, a busy-but-ineffective GPU (a spinning kernel), and an
// admin snoozing an idle GPU's alerts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, signIn, startPrometheus, startServer, waitForHydration } from './harness.mjs';

let prometheus;
let server;
before(async () => {
  prometheus = await startPrometheus({
    spinning_kernel: 'llm-pretrain',
    spinning_kernel_util_only: 'llm-finetune',
    bursty_serving: 'chat-serving',
    resident_idle: 'moe-experiments',
    training: 'asr-large',
  });
  server = await startServer({ BURNRATE_PROMETHEUS_URL: prometheus.url });
});
after(async () => {
  await server?.stop();
  await prometheus?.stop();
});

test('the Savings page names the counter each GPU was judged by and flags busy but ineffective', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.viewer, '/savings');
  await waitForHydration(page);
  await page.waitForSelector('[data-testid="gpu-table"]');
  const flagged = page.locator('[data-testid="gpu-row"][data-flag="busy-but-ineffective"]');
  assert.equal(await flagged.count(), 1);
  assert.equal((await flagged.locator('[data-testid="gpu-judged-by"]').textContent()).trim(), 'SM activity');
  assert.match(await flagged.locator('[data-testid="gpu-verdict"]').textContent(),
    /busy but ineffective: kernels running 99\.0% of the time, SM activity 0\.8%/);
  // The same kernel where only GPU_UTIL is published reads busy, and says so.
  const utilOnly = page.locator('[data-testid="gpu-row"]', { hasText: 'stuck-2' });
  assert.equal((await utilOnly.locator('[data-testid="gpu-judged-by"]').textContent()).trim(), 'GPU util');
  const chat = page.locator('[data-testid="utilisation-row"][data-project="chat-serving"]');
  assert.equal((await chat.locator('[data-testid="judged-by"]').textContent()).trim(), 'GPU util');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

test('an admin snoozes an idle GPU and the page says until when', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.admin, '/savings');
  await waitForHydration(page);
  const row = page.locator('[data-testid="idle-row"]', { hasText: 'notebook-1/gpu0' });
  await row.locator('summary').click();
  const form = row.locator('[data-testid="snooze-form"]');
  await form.locator('input[name="hours"]').fill('12');
  await form.locator('input[name="reason"]').fill('held for Friday\'s demo');
  await form.locator('button[type="submit"]').click();
  await page.locator('[data-testid="idle-row"]', { hasText: 'notebook-1/gpu0' })
    .locator('[data-testid="idle-snooze"]', { hasText: 'snoozed until' })
    .waitFor({ timeout: 30_000 });
  const { rows } = await server.db.query(
    "select actor, details->>'reason' as reason from audit_log where action = 'savings.idle_snooze'");
  assert.equal(rows.length, 1);
  assert.equal(rows[0].reason, 'held for Friday\'s demo');
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors, ...problems.dialogs], []);
  await page.close();
});

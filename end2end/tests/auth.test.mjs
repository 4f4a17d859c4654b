// Sign-in, roles and sign-out in Chromium, with the page's Content-Security-Policy enforced.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, signIn, startServer, waitForHydration } from './harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

test('a signed-out visitor is sent to sign in and comes back to the page they asked for', async () => {
  const { page, problems } = await openPage(server.browser);
  await page.goto(`${server.baseUrl}/?period=prev`);
  assert.match(page.url(), /\/login\?next=/);
  await waitForHydration(page);
  await page.fill('input[name="email"]', server.accounts.viewer.email);
  await page.fill('input[name="password"]', server.accounts.viewer.password);
  await page.click('[data-testid="login-form"] button[type="submit"]');
  await page.waitForURL(/\/\?period=prev$/);
  await page.waitForSelector('[data-testid="team-row"]');
  assert.match(await page.textContent('[data-testid="signed-in-as"]'), /viewer@example.com \(viewer\)/);
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors], [], 'no CSP violations or errors');
  await page.close();
});

test('a wrong password shows one message and signs nobody in', async () => {
  const { page } = await openPage(server.browser);
  await page.goto(`${server.baseUrl}/login`);
  await waitForHydration(page);
  await page.fill('input[name="email"]', server.accounts.admin.email);
  await page.fill('input[name="password"]', 'definitely not it');
  await page.click('[data-testid="login-form"] button[type="submit"]');
  assert.match(await page.textContent('[data-testid="form-error"]'), /email or password is incorrect/);
  assert.match(page.url(), /\/login/);
  await page.close();
});

test('admins see user administration, viewers do not, and sign-out ends the session', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.admin);
  await page.click('a[href="/admin/users"]');
  await page.waitForSelector('[data-testid="account-row"]');
  assert.equal(await page.locator('[data-testid="account-row"]').count(), 3, 'the three demo accounts');
  await page.click('[data-testid="sign-out"]');
  await page.waitForURL(/\/login/);
  await page.goto(`${server.baseUrl}/admin/users`);
  assert.match(page.url(), /\/login\?next=/, 'the session is gone');

  await signIn(page, server.baseUrl, server.accounts.viewer);
  assert.equal(await page.locator('a[href="/admin/users"]').count(), 0);
  await page.goto(`${server.baseUrl}/admin/users`);
  await waitForHydration(page);
  assert.match(await page.textContent('main'), /not allowed: only admins may do this/);
  assert.deepEqual(problems.pageErrors, []);
  await page.close();
});

test('sign-in through next values that try to leave the site ends on a page of burnrate', async () => {
  const hostile = [
    '//evil.example/',
    '/\\evil.example/',
    '/\t/evil.example/',
    '/\n/evil.example/',
    'https://evil.example/',
    '/%2F/evil.example/',
    '/%5Cevil.example/',
    'javascript:alert(1)',
    '/%0D%0ALocation:%20https://evil.example/',
    '/.//evil.example/',
    '/a/..//evil.example/',
  ];
  const origin = new URL(server.baseUrl).origin;
  for (const next of hostile) {
    const { page, problems } = await openPage(server.browser);
    await signIn(page, server.baseUrl, server.accounts.viewer, next);
    await page.waitForLoadState('load');
    assert.equal(new URL(page.url()).origin, origin, `${JSON.stringify(next)} left the site: ${page.url()}`);
    assert.equal(new URL(page.url()).pathname, '/', JSON.stringify(next));
    assert.match(await page.textContent('[data-testid="signed-in-as"]'), /viewer@example.com/);
    assert.deepEqual(problems.dialogs, [], 'no script ran');
    await page.close();
  }
});

test('a lead makes an API token on the account page, sees it once, uses it, and revokes it', async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.lead);
  await page.click('[data-testid="signed-in-as"]');
  await page.waitForSelector('[data-testid="create-token-form"]');
  await waitForHydration(page);
  await page.fill('[data-testid="create-token-form"] input[name="name"]', 'ci pipeline');
  await page.selectOption('[data-testid="create-token-form"] select[name="role"]', 'viewer');
  await page.click('[data-testid="create-token-form"] button[type="submit"]');
  const secret = (await page.textContent('[data-testid="token-secret"]', { timeout: 15000 })).trim();
  assert.match(secret, /^brt_[A-Za-z0-9_-]{43}$/);
  const row = page.locator('[data-testid="token-row"]', { hasText: 'ci pipeline' });
  await row.waitFor();
  assert.match(await row.textContent(), /viewer/);
  assert.match(await row.textContent(), /never/, 'not used yet');

  // The token opens the API, not the pages.
  const api = await fetch(`${server.baseUrl}/api/v1/teams`, { headers: { authorization: `Bearer ${secret}` } });
  assert.equal(api.status, 200);
  const pageWithToken = await fetch(`${server.baseUrl}/budgets`, {
    headers: { authorization: `Bearer ${secret}` },
    redirect: 'manual',
  });
  assert.notEqual(pageWithToken.status, 200);

  // Its last use shows after a reload; revoking it refuses the next call.
  await page.reload();
  await waitForHydration(page);
  await row.waitFor();
  assert.doesNotMatch(await row.textContent(), /never/);
  await row.locator('button', { hasText: 'Revoke' }).click();
  await page.locator('[data-testid="token-row"][data-state="revoked"]', { hasText: 'ci pipeline' }).waitFor();
  const refused = await fetch(`${server.baseUrl}/api/v1/teams`, { headers: { authorization: `Bearer ${secret}` } });
  assert.equal(refused.status, 401);
  assert.deepEqual([...problems.consoleErrors, ...problems.pageErrors], []);
  await page.close();
});

// A stop on the project's own GPUs, in Chromium: the violating project runs a tagged GPU
// instance (in moto), an admin makes the org policy a manual stop of the project's EC2 GPUs
// (the demo's is a dry-run stop of EC2 and notebooks), evaluation lists that GPU
// instance (in moto, through the real AWS SDK) under its stop, the admin approves it and
// sees it stopped, then reverses it and sees it running again.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { burnrateCli, openPage, signIn, startMoto, startServer, waitForHydration } from './harness.mjs';

let moto;
let server;
before(async () => {
  moto = await startMoto();
  server = await startServer({ ...moto.env, BURNRATE_AWS_REGIONS: 'us-east-1' });
});
after(async () => { await server?.stop(); await moto?.stop(); });

/** Reloads the page until `selector` shows, for up to 150 s (two passes of the loop). */
async function reloadUntil(page, selector) {
  const deadline = Date.now() + 150_000;
  for (;;) {
    if ((await page.locator(selector).count()) > 0) return;
    if (Date.now() > deadline) throw new Error(`${selector} did not show within 150 s`);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await page.reload();
    await waitForHydration(page);
  }
}

const stateOf = (id) => moto.python(
  `print(ec2.describe_instances(InstanceIds=["${id}"])["Reservations"][0]["Instances"][0]["State"]["Name"])`);

test("a manual stop lists the project's GPU instance, stops exactly it when approved, and reversal starts it", async () => {
  const { page, problems } = await openPage(server.browser);
  await signIn(page, server.baseUrl, server.accounts.admin, '/enforcement');
  await waitForHydration(page);

  // The largest project the org default judges this month (the demo's vision and recsys
  // teams have their own policies), and a GPU instance it runs (plus a CPU one).
  const { rows } = await server.db.query(
    `select v.project from violations v left join projects p on p.name = v.project
       left join teams t on t.id = p.team_id
     where v.period_start = date_trunc('month', current_date)::date and v.project not like '%<%'
       and coalesce(t.name, '') not in ('vision', 'recsys')
     order by v.spend desc limit 1`);
  assert.ok(rows.length, 'the demo has a project over the org limit this month');
  const { project } = rows[0];
  const launch = (type) => moto.python(
    `r = ec2.run_instances(ImageId="ami-12c6146b", InstanceType="${type}", MinCount=1, MaxCount=1,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "project", "Value": ${JSON.stringify(project)}},
                                                                {"Key": "user", "Value": "alice"}]}])
print(r["Instances"][0]["InstanceId"])`);
  const gpu = await launch('g5.xlarge');
  const cpu = await launch('m5.large');

  // The org default becomes a manual stop of the project's own EC2 GPUs.
  await page.click('[data-testid="policy-form"] summary');
  await page.fill('[data-testid="policy-form"] input[name="limit"]', '1000.00');
  await page.uncheck('[data-testid="policy-form"] input[name="notify"]');
  await page.uncheck('[data-testid="policy-form"] input[name="flag"]');
  await page.check('[data-testid="policy-form"] input[name="stop"]');
  await page.uncheck('[data-testid="policy-form"] input[name="stop_notebooks"]');
  // g5.xlarge carries NVMe instance store, which a stop erases: stopped only when allowed.
  await page.selectOption('[data-testid="policy-form"] select[name="stop_instance_store"]', 'allow');
  await page.selectOption('[data-testid="policy-form"] select[name="mode"]', 'manual');
  await page.click('button:text-is("Save policy")');
  await page.waitForSelector('[data-testid="policy-mode"]:text-is("manual")');

  // The policy change makes every proposal due for a new listing; each listing round (the
  // server's lister every minute, and `enforce evaluate`) lists up to 50, and the demo may
  // have more projects over the limit, so evaluate until this one's GPU is listed.
  const stopOf = async () => (await server.db.query(
    `select a.id, exists (select 1 from enforcement_resources r where r.action_id = a.id and r.resource_id = $2)
              as listed
       from enforcement_actions a join violations v on v.id = a.violation_id
     where a.action = 'stop' and v.project = $1 and a.status = 'awaiting_approval'`, [project, gpu])).rows;
  for (let pass = 0; pass < 6; pass += 1) {
    await burnrateCli(server.databaseUrl, ['enforce', 'evaluate'], { ...moto.env, BURNRATE_AWS_REGIONS: 'us-east-1' });
    if ((await stopOf())[0]?.listed) break;
  }
  const stops = await stopOf();
  assert.equal(stops.length, 1);
  assert.ok(stops[0].listed, 'the stop lists its resources');
  const id = stops[0].id;

  await page.reload();
  await waitForHydration(page);
  // A proposal's resources are folded: open them.
  await page.click(`[data-testid="action"][data-id="${id}"] [data-testid="stop-resources-details"] > summary`);
  const listed = `[data-testid="action"][data-id="${id}"] [data-testid="stop-resource"]`;
  await page.waitForSelector(`${listed}[data-id="${gpu}"][data-status="listed"]`);
  assert.equal(await page.locator(`${listed}[data-id="${cpu}"]`).count(), 0, "a CPU instance is not a stop's");
  const cells = await page.locator(`${listed}[data-id="${gpu}"] td`).allTextContents();
  assert.ok(cells.includes('g5.xlarge') && cells.includes('1') && cells.includes('alice'), cells.join(' | '));

  // AWS answers StopInstances with `stopping`: the stop is executing until a pass of the
  // server's enforcement loop (every minute) sees the instance stopped.
  await page.click(`[data-testid="approve-${id}"]`);
  await reloadUntil(page, `[data-testid="action"][data-id="${id}"][data-status="executed"]`);
  await page.waitForSelector(`${listed}[data-id="${gpu}"][data-status="stopped"]`);
  assert.equal(await stateOf(gpu), 'stopped');
  assert.equal(await stateOf(cpu), 'running');

  await page.click(`[data-testid="reverse-${id}"]`);
  await reloadUntil(page, `[data-testid="action"][data-id="${id}"][data-status="reversed"]`);
  await page.waitForSelector(`${listed}[data-id="${gpu}"][data-status="restarted"]`);
  assert.equal(await stateOf(gpu), 'running');

  assert.deepEqual(problems.pageErrors, []);
  assert.deepEqual(problems.consoleErrors, []);
});

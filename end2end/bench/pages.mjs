// Page benchmark: server-rendered pages under concurrent load on loopback, with the server's
// peak RSS and the raw SQL time of the same aggregation for comparison.
//
//   node bench/pages.mjs --url http://127.0.0.1:3000 --pid SERVER_PID \
//     --database postgres://postgres@127.0.0.1:5432/burnrate_bench \
//     --email bench@example.com --password '…' [--concurrency 32] [--seconds 20] \
//     [--modes cached,rendered,one,cold,custom,herd,sql] [--pages overview,teams,team,project,savings]
//     [--samples 60] [--first-range 0]
//     [--metrics-token T] [--api-token T]   (add `metrics` and `api` to --pages)
//     (`--pages accounts`: the Teams and the Team page filtered to the account with most spend)
//
// Each page is measured three ways: as viewers see it again and again (the rendered page
// comes from the page cache), rendered on every request (a unique `bench=N` query parameter
// defeats the page cache, not the data cache), both at --concurrency connections, and one
// request at a time (the latency of one render with nothing queued before it); then the first
// view after a data change (cold), the first view of a custom range nobody asked for before
// (custom), and the page's main aggregation as raw SQL.
//
// `--pages metrics` measures `GET /metrics` on the dashboard's address (the server started with
// BURNRATE_METRICS_TOKEN=T, passed as --metrics-token T) and `--pages api` the heaviest
// `/api/v1` reads (a token from `burnrate token create`, --api-token T; start the server with
// BURNRATE_API_RATE_LIMIT=100000 so the load is not answered 429): the same modes, with the
// bearer token in place of the session cookie.
//
// Requests go through node:http with keep-alive and Chromium's Accept-Encoding; bodies are
// read but not decompressed, so the generator spends as little of the shared CPU as it can.
// Every loop is bounded by --seconds; only 127.0.0.1 is contacted.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import pg from 'pg';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, arg, i, all) => {
  if (arg.startsWith('--')) pairs.push([arg.slice(2), all[i + 1]]);
  return pairs;
}, []));
const base = args.url ?? 'http://127.0.0.1:3000';
if (!/^http:\/\/127\.0\.0\.1(:\d+)?$/.test(base)) throw new Error('--url must be http://127.0.0.1:PORT (loopback only)');
const concurrency = Number(args.concurrency ?? 32);
const seconds = Number(args.seconds ?? 20);
// A subset of the measures, e.g. `--modes rendered` while a profiler watches the server.
const modes = new Set((args.modes ?? 'cached,rendered,one,cold,custom,herd,sql').split(','));
const pageNames = new Set((args.pages ?? 'overview,teams,team').split(','));
// First views per page and mode. The p95 of 60 is their third slowest (of 20, the slowest).
const samples = Number(args.samples ?? 60);
// Where in the sequence of custom ranges to start, so a second run asks for ranges the
// first did not (the sequence does not repeat for 240 ranges).
const firstRange = Number(args['first-range'] ?? 0);

async function signIn() {
  const body = new URLSearchParams({ email: args.email, password: args.password });
  const response = await fetch(`${base}/api/login`, {
    method: 'POST', body, redirect: 'manual',
    headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
  });
  const cookie = response.headers.getSetCookie().find((c) => c.startsWith('burnrate_session='));
  if (!cookie) throw new Error(`sign-in failed: ${response.status} ${await response.text()}`);
  return cookie.split(';')[0];
}

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(status.match(/VmRSS:\s+(\d+)/)[1]) / 1024;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const target = new URL(base);

/** GETs `path`, resolving to the status once the whole body has arrived. `auth` is the
 * session cookie, or `Bearer …` for /metrics and /api/v1. */
function get(path, auth) {
  const credentials = auth.startsWith('Bearer ') ? { authorization: auth } : { cookie: auth };
  return new Promise((resolve, reject) => {
    const request = http.get({
      agent, host: target.hostname, port: target.port, path,
      headers: { ...credentials, 'accept-encoding': 'gzip, deflate, br, zstd' },
    }, (response) => {
      response.on('data', () => {});
      response.on('end', () => resolve(response.statusCode));
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

let uniqueQuery = 0;

async function load(path, cookie, { connections = concurrency, bust = false } = {}) {
  const latencies = [];
  let failures = 0;
  let peakRss = 0;
  const sampler = setInterval(() => { if (args.pid) peakRss = Math.max(peakRss, rssMiB(args.pid)); }, 200);
  const deadline = performance.now() + seconds * 1000;
  async function worker() {
    while (performance.now() < deadline) {
      const url = bust ? `${path}${path.includes('?') ? '&' : '?'}bench=${uniqueQuery += 1}` : path;
      const started = performance.now();
      const status = await get(url, cookie);
      if (status !== 200) failures += 1;
      latencies.push(performance.now() - started);
    }
  }
  const started = performance.now();
  await Promise.all(Array.from({ length: connections }, worker));
  const elapsed = (performance.now() - started) / 1000;
  clearInterval(sampler);
  latencies.sort((a, b) => a - b);
  return {
    connections, bust, requests: latencies.length, failures, rps: Math.round(latencies.length / elapsed),
    p50: percentile(latencies, 50), p95: percentile(latencies, 95), peakRss,
  };
}

async function sqlTimes(db, sql, params) {
  const times = [];
  for (let i = 0; i < 30; i += 1) {
    const started = performance.now();
    await db.query(sql, params);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95) };
}

// The first view after a data change: the version bump (what every ingestion, budget or team
// write does) empties both caches, so the page's data is computed from SQL and rendered.
async function coldTimes(path, cookie) {
  const times = [];
  let failures = 0;
  for (let i = 0; i < samples; i += 1) {
    // A data change, as every write to the cost, team or budget tables makes (a trigger
    // appends to data_changes); the version is the sum of those rows.
    await db.query('insert into data_changes (weight) values (1)');
    const started = performance.now();
    if (await get(path, cookie) !== 200) failures += 1;
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { requests: times.length, failures, p50: percentile(times, 50), p95: percentile(times, 95) };
}

// The first view of a custom range never asked for before (so neither cache has it):
// --samples ranges of 9 to 66 days, each ending on a different day of the last 240 (so
// starting in the last 306), one at a time.
async function customTimes(path, cookie, latest) {
  const times = [];
  let failures = 0;
  for (let i = firstRange; i < firstRange + samples; i += 1) {
    const days = 9 + ((i * 17) % 58);
    const to = new Date(latest.getTime() - ((i * 37) % 240) * 86_400_000);
    const from = new Date(to.getTime() - days * 86_400_000);
    const period = `${from.toISOString().slice(0, 10)}..${to.toISOString().slice(0, 10)}`;
    const started = performance.now();
    if (await get(path.replace('period=mtd', `period=${period}`), cookie) !== 200) failures += 1;
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { requests: times.length, failures, p50: percentile(times, 50), p95: percentile(times, 95) };
}

// A thundering herd: right after a data change, 32 connections ask for the same page at
// once, as dashboards on a wall do after each ingestion. They should share one computation
// of its data (single flight): the slowest of them is what each round reports.
async function herdTimes(path, cookie) {
  const slowest = [];
  let failures = 0;
  for (let round = 0; round < 5; round += 1) {
    await db.query('insert into data_changes (weight) values (1)');
    const times = await Promise.all(Array.from({ length: concurrency }, async () => {
      const started = performance.now();
      if (await get(path, cookie) !== 200) failures += 1;
      return performance.now() - started;
    }));
    slowest.push(Math.max(...times));
  }
  slowest.sort((a, b) => a - b);
  return { rounds: slowest.length, failures, slowest_p50: percentile(slowest, 50), slowest_max: slowest[slowest.length - 1] };
}

const db = new pg.Client({ connectionString: args.database });
await db.connect();
const { rows: [{ facts }] } = await db.query(
  `select (select count(*) from costs_by_user) + (select count(*) from costs_by_usage_type)
          + (select count(*) from costs_by_service) + (select count(*) from costs_by_record_type) as facts`);
const { rows: [{ team }] } = await db.query(
  "select t.name as team from teams t join projects p on p.team_id = t.id group by 1 order by count(*) desc limit 1");
const { rows: [{ project, latest }] } = await db.query(
  `select (select project from daily_project_costs where project <> '' group by 1 order by count(*) desc, 1 limit 1) as project,
          (select max(day) + 1 from daily_project_costs) as latest`);
const { rows: [{ account }] } = await db.query(
  `select account_id as account from daily_project_costs where account_id <> ''
   group by 1 order by sum(unblended) desc, 1 limit 1`);
const sessionCookie = await signIn();
const pages = [
  // Raw SQL for comparison: the aggregations these pages read before the page rollups (the
  // allocation's rows, the facts); the pages themselves now read the rollups.
  { name: 'overview', path: '/?period=mtd', sql: `select coalesce(t.name, 'Unassigned'), sum(r.unblended), sum(r.gpu_unblended)
      from allocated_daily_costs r left join teams t on t.id = r.team_id
      where r.day >= date_trunc('month', current_date) and r.day <= current_date group by 1` },
  { name: 'teams', path: '/teams?period=mtd', sql: `select coalesce(t.name, 'Unassigned'), sum(a.unblended),
        sum(a.unblended) filter (where a.source = 'direct'), sum(a.unblended) filter (where a.source = 'shared')
      from allocated_daily_costs a left join teams t on t.id = a.team_id
      where a.day >= date_trunc('month', current_date) - interval '1 month' and a.day <= current_date group by 1` },
  // The Team page's user split as it was read from the facts.
  { name: 'team', path: `/teams/${encodeURIComponent(team)}?period=mtd`, sql: `select c.user_name, sum(c.unblended) from costs_by_user c
      where c.day >= date_trunc('month', current_date) and c.day < current_date + 1
        and (case when $1 = $2
                  then c.project not in (select name from projects where team_id is not null)
                  else c.project in (select p.name from projects p join teams t on t.id = p.team_id where t.name = $1)
             end)
      group by 1 having sum(c.unblended) <> 0 order by 2 desc, 1 limit 100`, params: [team, 'Unassigned'] },
  // A Project page: its breakdowns from its own rows of the facts (project-first indexes).
  { name: 'project', path: `/projects/${encodeURIComponent(project)}?period=mtd`, sql: `select c.user_name, sum(c.unblended)
      from costs_by_user c where c.project = $1 and c.day >= date_trunc('month', current_date) and c.day < current_date + 1
      group by 1 order by 2 desc, 1 limit 100`, params: [project] },
  // The Savings page: every accelerator usage row of the last 30 settled days, as
  // `savings::facts::usage` reads them, then all rules in Rust (not in this SQL time).
  { name: 'savings', path: '/savings', sql: `select c.project, c.usage_type, c.day, c.unblended, c.usage_quantity
      from costs_by_usage_type c join usage_types u on u.usage_type = c.usage_type and u.gpu_count > 0
      where c.day >= (select min(day) from (select distinct day from daily_project_costs where not estimated
                                            order by day desc limit 30) d)
      order by c.project, c.usage_type, c.day` },
  // The same pages filtered to one AWS account (`?account=`): the per-team days come from the
  // rollup by account, a team's projects from the allocation's rows in the account.
  { name: 'accounts', path: `/teams?period=mtd&account=${account}` },
  { name: 'accounts', path: `/teams/${encodeURIComponent(team)}?period=mtd&account=${account}` },
  // Prometheus's scrape: money, budget and policy figures once per data version and day.
  { name: 'metrics', path: '/metrics', auth: args['metrics-token'] && `Bearer ${args['metrics-token']}` },
  // The API's heaviest reads: a year of costs by team and day (one page of 1,000 rows), the
  // budgets with their status, and the savings recommendations.
  { name: 'api', path: '/api/v1/costs?from=2025-12-01&to=2026-11-30&group_by=team&granularity=daily&limit=1000',
    auth: args['api-token'] && `Bearer ${args['api-token']}` },
  { name: 'api', path: '/api/v1/budgets', auth: args['api-token'] && `Bearer ${args['api-token']}` },
  { name: 'api', path: '/api/v1/savings/recommendations', auth: args['api-token'] && `Bearer ${args['api-token']}` },
];
console.log(`facts: ${facts}; concurrency ${concurrency}; ${seconds} s per page`);
const round = (result) => Object.fromEntries(
  Object.entries(result).map(([k, v]) => [k, typeof v === 'number' ? Math.round(v * 10) / 10 : v]));
for (const page of pages.filter((p) => pageNames.has(p.name))) {
  if ('auth' in page && !page.auth) throw new Error(`--pages ${page.name} needs --${page.name}-token`);
  const cookie = page.auth ?? sessionCookie;
  await load(page.path, cookie); // warm-up: fills the data and page caches
  console.log(page.path);
  if (modes.has('cached')) console.log('  cached   ', JSON.stringify(round(await load(page.path, cookie))));
  if (modes.has('rendered')) console.log('  rendered ', JSON.stringify(round(await load(page.path, cookie, { bust: true }))));
  if (modes.has('one')) console.log('  one at a time, rendered', JSON.stringify(round(await load(page.path, cookie, { connections: 1, bust: true }))));
  if (modes.has('cold')) console.log('  first view after a data change', JSON.stringify(round(await coldTimes(page.path, cookie))));
  if (modes.has('custom')) console.log('  first view of a custom range', JSON.stringify(round(await customTimes(page.path, cookie, latest))));
  if (modes.has('herd')) console.log(`  ${concurrency} first views at once after a data change`, JSON.stringify(round(await herdTimes(page.path, cookie))));
  if (modes.has('sql') && page.sql) console.log('  raw SQL  ', JSON.stringify(round(await sqlTimes(db, page.sql, page.params ?? []))));
}
agent.destroy();
await db.end();

// Starts a real burnrate server on a fresh database and a real Chromium for each spec file.
import { execFile, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { chromium } from 'playwright-core';

const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function databaseUrl(name) {
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error('DATABASE_URL must name a PostgreSQL server (scripts/test.sh sets it)');
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The server's environment: this database, and no AWS credentials from the developer's shell. */
function serverEnv(url) {
  const env = { ...process.env, DATABASE_URL: url };
  for (const name of Object.keys(env)) if (name.startsWith('AWS_')) delete env[name];
  return {
    ...env,
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/nonexistent/burnrate-e2e',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/burnrate-e2e',
  };
}

/** Runs the burnrate CLI against `databaseUrl`, with `env` added; resolves with its stdout. */
export function burnrateCli(databaseUrl, args, env = {}) {
  return new Promise((resolve, reject) => {
    execFile(process.env.BURNRATE_BIN, args, { env: { ...serverEnv(databaseUrl), ...env }, maxBuffer: 64 << 20 },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)));
  });
}

/** Serves `burnrate serve --demo` on a new database, with `env` added to the server's
 * environment; returns its URL, a pg client and stop(). */
export async function startServer(env = {}) {
  const name = `burnrate_e2e_${process.pid}`;
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();

  const port = await freePort();
  const url = databaseUrl(name);
  const child = spawn(process.env.BURNRATE_BIN, ['serve', '--demo', '--addr', `127.0.0.1:${port}`], {
    env: { ...serverEnv(url), ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // `serve --demo` prints the demo accounts' credentials once, on stdout.
  let stdout = '';
  child.stdout.on('data', (chunk) => { stdout += chunk; process.stdout.write(chunk); });
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`burnrate exited early with ${child.exitCode}`);
    try {
      // The credentials are printed before serving starts, but may reach us after /readyz.
      if ((await fetch(`${baseUrl}/readyz`)).ok && stdout.includes('viewer@example.com')) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error('burnrate did not become ready in 120 s');
    await sleep(250);
  }
  const accounts = {};
  for (const [, role, email, password] of stdout.matchAll(/^\s+(admin|lead|viewer)\s+(\S+@\S+)\s+(\S+)$/gm)) {
    accounts[role] = { email, password };
  }
  if (!accounts.admin) throw new Error(`no demo credentials in the server's output:\n${stdout}`);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });

  return {
    baseUrl,
    databaseUrl: url,
    db,
    browser,
    accounts,
    async stop() {
      await browser.close();
      await db.end();
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    },
  };
}

/** A page that records console errors, uncaught exceptions and dialogs. */
export async function openPage(browser) {
  const page = await browser.newPage();
  const problems = { consoleErrors: [], pageErrors: [], dialogs: [] };
  page.on('console', (m) => { if (m.type() === 'error') problems.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => problems.pageErrors.push(String(e)));
  page.on('dialog', async (d) => { problems.dialogs.push(d.message()); await d.dismiss(); });
  return { page, problems };
}

export async function waitForHydration(page) {
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
}

/** A decimal string as an exact BigInt count of 1e-10 dollars, for exact comparisons. */
export function units(decimal) {
  const [whole, fraction = ''] = String(decimal).split('.');
  const negative = whole.startsWith('-');
  const digits = BigInt(whole.replace('-', '') + fraction.padEnd(10, '0').slice(0, 10));
  return negative ? -digits : digits;
}

/** Signs in through the login page as one of the demo accounts. */
export async function signIn(page, baseUrl, account, next = '/') {
  await page.goto(`${baseUrl}/login?next=${encodeURIComponent(next)}`);
  await waitForHydration(page);
  await page.fill('input[name="email"]', account.email);
  await page.fill('input[name="password"]', account.password);
  await page.click('[data-testid="login-form"] button[type="submit"]');
  await page.waitForSelector('[data-testid="signed-in-as"]', { timeout: 30_000 });
}

/**
 * A real Prometheus on a free loopback port holding the DCGM workload shapes of
 * tests/fixtures/dcgm_workloads.py (loaded with promtool), each shape's GPU labelled with
 * the project `projects` maps it to. Returns its URL and stop().
 */
export async function startPrometheus(projects) {
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { promisify } = await import('node:util');
  const run = promisify(execFile);
  const dir = await mkdtemp(join(tmpdir(), 'burnrate-prometheus-'));
  const args = ['../tests/fixtures/dcgm_workloads.py', '--end', String(Math.floor(Date.now() / 1000) - 5)];
  for (const [shape, project] of Object.entries(projects)) args.push('--project', `${shape}=${project}`);
  const { stdout } = await run('python3', args, { maxBuffer: 64 << 20 });
  await writeFile(join(dir, 'dcgm.om'), stdout);
  await run('promtool', ['tsdb', 'create-blocks-from', 'openmetrics', join(dir, 'dcgm.om'), join(dir, 'data')]);
  await writeFile(join(dir, 'prometheus.yml'), 'global:\n  scrape_interval: 1m\n');
  const port = await freePort();
  const child = spawn('prometheus', [
    `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
  ], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try { if ((await fetch(`${url}/-/ready`)).ok) break; } catch { /* starting */ }
    if (Date.now() > deadline) throw new Error('prometheus did not become ready in 30 s');
    await sleep(250);
  }
  return {
    url,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** moto (target/pyenv, from scripts/setup.sh --tests) on a free loopback port, with a
 * boto3 runner for setting up and reading the AWS side; stop() ends it. */
export async function startMoto() {
  const port = await freePort();
  const child = spawn('../target/pyenv/bin/moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try { if ((await fetch(`${url}/moto-api/`)).ok) break; } catch { /* starting */ }
    if (Date.now() > deadline) throw new Error('moto did not become ready in 30 s');
    await sleep(250);
  }
  const front = await recordingFront(url);
  const env = { AWS_ENDPOINT_URL: front.url, AWS_ACCESS_KEY_ID: 'AKIDE2E', AWS_SECRET_ACCESS_KEY: 'e2e-secret', AWS_REGION: 'us-east-1' };
  return {
    url,
    env,
    /** Runs a Python snippet with `ec2` (boto3, us-east-1, against moto) bound; its stdout. */
    python(snippet) {
      const script = `import boto3\nec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url="${url}", aws_access_key_id="x", aws_secret_access_key="x")\n${snippet}`;
      return new Promise((resolve, reject) => {
        execFile('../target/pyenv/bin/python', ['-c', script], (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout.trim())));
      });
    },
    async stop() {
      front.server.close();
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    },
  };
}

/** The recording front of tests/it/common/recording.rs, for the browser tests: burnrate's
 * signed AWS calls pass through to `upstream` and each exchange becomes a line of
 * $BURNRATE_AWS_RECORDING/e2e-<pid>.jsonl, which scripts/aws-contract/check.py reads. */
async function recordingFront(upstream) {
  const folder = process.env.BURNRATE_AWS_RECORDING;
  if (folder) mkdirSync(folder, { recursive: true });
  const server = createHttpServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => name !== 'host' && name !== 'content-length'));
    let status = 502;
    let answer = Buffer.from('front: upstream unreachable');
    let answerHeaders = {};
    try {
      const response = await fetch(`${upstream}${req.url}`, { method: req.method, headers, body: ['GET', 'HEAD'].includes(req.method) ? undefined : body, signal: AbortSignal.timeout(30_000) });
      status = response.status;
      answer = Buffer.from(await response.arrayBuffer());
      answerHeaders = Object.fromEntries([...response.headers].filter(([name]) => !['content-length', 'transfer-encoding', 'content-encoding'].includes(name)));
    } catch { /* answered 502 */ }
    const signed = (req.headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256');
    if (folder && signed) {
      appendFileSync(`${folder}/e2e-${process.pid}.jsonl`, `${JSON.stringify({
        front: 'e2e-moto', test: process.argv[1] ?? '?', method: req.method, uri: req.url,
        authorization: req.headers.authorization ?? null, target: req.headers['x-amz-target'] ?? null,
        content_type: req.headers['content-type'] ?? null, smithy_protocol: req.headers['smithy-protocol'] ?? null,
        request: body.toString('base64'), status, answer_content_type: answerHeaders['content-type'] ?? null,
        answer: answer.toString('base64'),
      })}\n`);
    }
    res.writeHead(status, answerHeaders);
    res.end(answer);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, server };
}

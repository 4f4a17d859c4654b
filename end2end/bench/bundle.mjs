// What each page downloads of the wasm bundle, from the split release site (scripts/build-site.sh).
//
// Every page loads the shared bundle (`burnrate.wasm`) plus the chunks that
// `__wasm_split_manifest.json` lists for its route. Each file is sized raw, gzipped (level 6,
// as `gzip -c`) and brotli-compressed (quality 11, as scripts/build-site.sh stores it and
// the server sends it), one file at a time, because that is how the browser
// fetches them. When the build stored precompressed copies (`.wasm.gz`, `.wasm.br`, see
// scripts/build-release.sh), their sizes are what the server actually sends.
//
//   node bench/bundle.mjs [--pkg ../target/site/pkg]
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const args = process.argv.slice(2);
const pkgAt = args.indexOf('--pkg');
const pkg = pkgAt >= 0 ? args[pkgAt + 1] : new URL('../../target/site/pkg', import.meta.url).pathname;

const sizes = new Map();
function size(name) {
  if (!sizes.has(name)) {
    const bytes = readFileSync(join(pkg, `${name}.wasm`));
    sizes.set(name, {
      raw: bytes.length,
      gzip: gzipSync(bytes, { level: 6 }).length,
      brotli: brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
      sentGzip: storedSize(`${name}.wasm.gz`),
      sentBrotli: storedSize(`${name}.wasm.br`),
    });
  }
  return sizes.get(name);
}

function storedSize(file) {
  const path = join(pkg, file);
  return existsSync(path) ? statSync(path).size : NaN;
}

function total(names) {
  const sum = { files: names.length, raw: 0, gzip: 0, brotli: 0, sentGzip: 0, sentBrotli: 0 };
  for (const name of names) {
    for (const [key, value] of Object.entries(size(name))) sum[key] += value;
  }
  return sum;
}

const kb = (n) => (Number.isNaN(n) ? 'n/a' : (n / 1000).toFixed(1));
const row = (label, t) => console.log(
  `| ${label} | ${t.files} | ${kb(t.raw)} | ${kb(t.gzip)} | ${kb(t.brotli)} | ${kb(t.sentGzip)} | ${kb(t.sentBrotli)} |`);
const manifest = JSON.parse(readFileSync(join(pkg, '__wasm_split_manifest.json'), 'utf8'));
const shared = total(['burnrate']);
console.log('| route | files | raw KB | gzip 6 KB | brotli 11 KB | sent as .gz KB | sent as .br KB |');
console.log('|---|---|---|---|---|---|---|');
row('shared bundle `burnrate.wasm`', shared);
const rows = Object.entries(manifest).map(([split, chunks]) => {
  // `__overview_route_view_<hash>` → `overview`
  const route = split.replace(/^__/, '').replace(/_route_view_\d+$/, '');
  return [route, total(['burnrate', ...chunks])];
});
rows.sort((a, b) => b[1].gzip - a[1].gzip);
for (const [route, t] of rows) row(`${route} (shared + its chunks)`, t);

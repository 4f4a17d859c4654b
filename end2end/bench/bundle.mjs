// What each page downloads of the wasm bundle, from a `cargo leptos build --release --split`.
//
// Every page loads the shared bundle (`burnrate.wasm`) plus the chunks that
// `__wasm_split_manifest.json` lists for its route. Each file is sized raw, gzipped (level 6,
// as `gzip -c`) and brotli-compressed (quality 11, as `cargo leptos build --precompress`
// stores it and the server sends it), one file at a time, because that is how the browser
// fetches them.
//
//   node bench/bundle.mjs [--pkg ../target/site/pkg]
import { readFileSync } from 'node:fs';
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
    });
  }
  return sizes.get(name);
}

function total(names) {
  const sum = { files: names.length, raw: 0, gzip: 0, brotli: 0 };
  for (const name of names) {
    const s = size(name);
    sum.raw += s.raw;
    sum.gzip += s.gzip;
    sum.brotli += s.brotli;
  }
  return sum;
}

const kb = (n) => (n / 1000).toFixed(1);
const manifest = JSON.parse(readFileSync(join(pkg, '__wasm_split_manifest.json'), 'utf8'));
const shared = total(['burnrate']);
console.log('| route | files | raw KB | gzip KB | brotli KB |');
console.log('|---|---|---|---|---|');
console.log(`| shared bundle \`burnrate.wasm\` | 1 | ${kb(shared.raw)} | ${kb(shared.gzip)} | ${kb(shared.brotli)} |`);
const rows = Object.entries(manifest).map(([split, chunks]) => {
  // `__overview_route_view_<hash>` → `overview`
  const route = split.replace(/^__/, '').replace(/_route_view_\d+$/, '');
  return [route, total(['burnrate', ...chunks])];
});
rows.sort((a, b) => b[1].gzip - a[1].gzip);
for (const [route, t] of rows) {
  console.log(`| ${route} (shared + its chunks) | ${t.files} | ${kb(t.raw)} | ${kb(t.gzip)} | ${kb(t.brotli)} |`);
}

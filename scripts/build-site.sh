#!/usr/bin/env bash
# The release site, target/site: what `cargo leptos build --release --split --precompress`
# made, in the same steps and file names, without cargo-leptos (whose install was most of a
# fresh machine's time to the first page; docs/PERFORMANCE.md). scripts/build-release.sh
# and the Dockerfile run it; scripts/setup.sh installs its tools.
#
#   1. the browser bundle: the crate's lib with `hydrate`, wasm32, profile wasm-release,
#      linked with relocations kept so it can be cut (target/front, as cargo-leptos);
#   2. burnrate-wasm-split (tools/wasm-split) cuts it into each lazy page's chunks, their
#      loader and the manifest the server reads to preload a page's chunks;
#   3. wasm-bindgen writes the JS glue for the main module (exports kept, names mangled,
#      as the chunks expect), renamed burnrate.wasm as leptos's HydrationScripts loads it;
#   4. wasm-opt -Oz over every wasm file; esbuild minifies the glue;
#   5. lightningcss compiles style/main.css for the "defaults" browsers, minified;
#   6. public/ is copied in, then every file gets a gzip -9 (.gz) and a brotli (.br) copy.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/leptos-env.sh
source scripts/lib/leptos-env.sh

site=target/site
pkg="$site/pkg"
front=target/front
out="$front/wasm32-unknown-unknown/wasm-release"
name=burnrate

# The flags in .cargo/config.toml, plus relocations for the splitter: cargo joins the
# --config array after the file's. A RUSTFLAGS variable replaces both, so then the
# relocations go into it (and it must hold --cfg erase_components itself, see CONTRIBUTING.md).
relocs=-Clink-args=--emit-relocs
if [ -n "${CARGO_ENCODED_RUSTFLAGS:-}" ]; then
  export CARGO_ENCODED_RUSTFLAGS="$CARGO_ENCODED_RUSTFLAGS"$'\x1f'"$relocs"
elif [ -n "${RUSTFLAGS:-}" ]; then
  export RUSTFLAGS="$RUSTFLAGS $relocs"
fi
cargo build --lib --package=burnrate --target=wasm32-unknown-unknown --profile=wasm-release \
  --no-default-features --features=hydrate --target-dir="$front" \
  --config "build.rustflags=[\"$relocs\"]"

rm -rf "$site"
mkdir -p "$pkg"
burnrate-wasm-split "$out/$name.wasm" "$out/${name}_split.wasm" "$pkg" "$name" >/dev/null
wasm-bindgen --target=web --keep-lld-exports --no-demangle --no-typescript \
  --out-name="$name" --out-dir="$pkg" "$out/${name}_split.wasm"
mv "$pkg/${name}_bg.wasm" "$pkg/$name.wasm"

# wasm-opt warns of a name subsection it does not know (the splitter's); its output is shown
# only when it fails, as cargo-leptos did.
optimise() { out="$(wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int "$1" -o "$1" 2>&1)" || { echo "$out" >&2; return 1; }; }
export -f optimise
find "$pkg" -name '*.wasm' -print0 | xargs -0 -P "$(nproc)" -n 1 bash -c 'optimise "$0"'
# The glue imports the chunks' loader once per chunk under the same key (the same module):
# esbuild says so, and keeps the code as it is.
esbuild "$pkg/$name.js" --minify --format=esm --log-level=warning --log-override:duplicate-object-key=silent \
  --allow-overwrite --outfile="$pkg/$name.js"
lightningcss --minify --bundle --targets defaults style/main.css -o "$pkg/$name.css"
cp -R public/. "$site/"

find "$site" -type f ! -name '*.gz' ! -name '*.br' -exec gzip -9 --keep --force --no-name {} +
node scripts/lib/precompress.mjs "$site"
echo "build-site: $site written ($(find "$site" -type f ! -name '*.gz' ! -name '*.br' | wc -l) files, each with .gz and .br)" >&2

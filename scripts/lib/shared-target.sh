# Sourced by scripts/setup.sh and scripts/run.sh: makes `target/` a link to one build
# directory per machine and user, outside the checkout, so a fresh clone on a machine that
# has built burnrate before reuses every compiled dependency (clippy's metadata, the test
# build, the wasm site) instead of compiling ~600 crates again. That is what a Rust CI's
# cache does; here it is the scripts' own, so `.ci/run` on a clean clone gets it.
#
# - BURNRATE_SHARED_TARGET=off keeps a private `target/` (e.g. to bisect a build problem).
# - BURNRATE_SHARED_TARGET=DIR puts the shared directory elsewhere.
# - An existing `target/` (a real directory) is left alone: nothing is moved or deleted.
#
# Cargo keeps each checkout's own crate apart by its path and rebuilds it when its sources
# change, so two checkouts never read each other's burnrate. Never run two builds into the
# shared directory at once: cargo's lock makes the second wait, it does not corrupt.
shared_target_link() {
  local root="$1" dir="${BURNRATE_SHARED_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/burnrate/target}"
  [ "${BURNRATE_SHARED_TARGET:-}" = off ] && return 0
  if [ -e "$root/target" ] || [ -L "$root/target" ]; then return 0; fi
  mkdir -p "$dir"
  ln -s "$dir" "$root/target"
  printf '\033[1msetup:\033[0m target/ -> %s (shared build cache; BURNRATE_SHARED_TARGET=off for a private one)\n' "$dir" >&2
}

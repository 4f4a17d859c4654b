# Sourced by scripts/setup.sh and scripts/run.sh: makes `target/` a link to one build
# directory per machine and user, outside the checkout, so a fresh clone on a machine that
# has built burnrate before reuses every compiled dependency (clippy's metadata, the test
# build, the wasm site) instead of compiling ~600 crates again. That is what a Rust CI's
# cache does; here it is the scripts' own, so `.ci/run` on a clean clone gets it.
#
# - BURNRATE_SHARED_TARGET=off keeps a private `target/` (e.g. to bisect a build problem).
# - BURNRATE_SHARED_TARGET=DIR puts the shared directory elsewhere (made absolute).
# - An existing `target/` (a real directory) is left alone: nothing is moved or deleted. A
#   link whose directory was removed gets the directory back.
# - Where the directory cannot be made (a read-only home), `target/` stays private.
#
# What is shared: compiled dependencies, and the fixed paths every checkout writes
# (`target/debug/burnrate`, `target/site`, the Python test environments). So never run two
# checkouts' builds or test suites at once on one machine: cargo's lock serialises the
# builds, but the second suite would serve the first's binary. Each checkout path also
# leaves its own copy of burnrate's own crate; remove the directory to reclaim the space.
shared_target_link() {
  local root="$1" dir="${BURNRATE_SHARED_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/burnrate/target}"
  [ "${BURNRATE_SHARED_TARGET:-}" = off ] && return 0
  if [ -L "$root/target" ]; then
    # A link already: make sure what it names exists.
    mkdir -p "$(readlink -f "$root/target" 2>/dev/null || readlink "$root/target")" 2>/dev/null || true
    return 0
  fi
  [ -e "$root/target" ] && return 0
  dir="$(realpath -m "$dir")"
  if ! mkdir -p "$dir" 2>/dev/null; then
    printf '\033[1msetup:\033[0m cannot create %s; keeping a private target/\n' "$dir" >&2
    return 0
  fi
  ln -s "$dir" "$root/target"
  printf '\033[1msetup:\033[0m target/ -> %s (shared build cache; BURNRATE_SHARED_TARGET=off for a private one)\n' "$dir" >&2
}

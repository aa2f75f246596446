#!/usr/bin/env bash
# Regenerate bins/git-shim/hot-symbols.txt: the functions one git-shim call runs, which the
# build places together at the start of .text (lld's --symbol-ordering-file; see
# build/static_pie.rs, `order_symbols`). They then share a few 64 KB fault-around windows
# instead of being spread over the 1.9 MB of text, so a call takes fewer page faults
# (docs/perf-shim.md). A stale list only loses that gain: names that no longer exist (a new
# toolchain or dependency changes Rust's symbol hashes) are skipped by the linker.
#
#   bins/git-shim/hot-symbols.sh [GIT]      # after `cargo build --release -p git-shim`
#
# The names come from two runs of the installed shim on `git rev-parse HEAD` in this checkout:
# valgrind's callgrind (every function called, mangled) and `perf record` of 600 calls (the
# string functions glibc picks for this CPU, which valgrind's emulated CPU does not pick).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
git=${1:-/usr/local/bin/git}
shim="$here/target/release/git-shim"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/etc" "$work/bin"
cat > "$work/etc/policy.toml" <<TOML
session = "order"
repo = "$here"
real_git = "$git"
audit_log = "$work/audit.log"
state_dir = "$work/state"
TOML
cp "$shim" "$work/git-shim"
HOME="$work" "$work/git-shim" --install "$work/bin" --policy "$work/etc/policy.toml" >/dev/null
export HOME="$work" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
cd "$here"
valgrind --tool=callgrind --demangle=no --trace-children=yes --dump-before=execve \
  --callgrind-out-file="$work/cg.%p" "$work/bin/git" rev-parse HEAD >/dev/null 2>&1
# cg.<pid>.1 is the shim up to its execve.
find "$work" -name 'cg.*.1' -exec grep -ohE '^c?fn=\([0-9]+\) .*' {} + |
  sed -E "s/^c?fn=\([0-9]+\) //; s/'[0-9]+\$//" > "$work/names"
perf record -q -F 25000 -o "$work/perf.data" -- \
  bash -c "for i in \$(seq 600); do '$work/bin/git' rev-parse HEAD >/dev/null; done" 2>/dev/null
perf report -i "$work/perf.data" --comms git --dsos "$work/bin/git" --sort sym --stdio \
  --no-demangle 2>/dev/null | awk '!/^#/ && NF >= 3 {print $NF}' >> "$work/names"
# Only names the binary defines (no callgrind pseudo-names, no bare addresses).
nm --defined-only "$shim" | awk '{print $3}' | sort -u > "$work/defined"
sort -u "$work/names" | comm -12 - "$work/defined" > "$here/bins/git-shim/hot-symbols.txt"
echo "$(wc -l < "$here/bins/git-shim/hot-symbols.txt") symbols in bins/git-shim/hot-symbols.txt"

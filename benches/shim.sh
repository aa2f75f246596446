#!/usr/bin/env bash
# Overhead per call of git-shim against the real git, measured in one hyperfine run:
# `git rev-parse HEAD` and `git status` on this repository's own checkout (or $REPO).
#
#   benches/shim.sh [GIT]          # GIT defaults to /usr/local/bin/git
#
# The shim is built as a static binary first (the hot path is process start-up):
#   RUSTFLAGS="-C target-feature=+crt-static" cargo build --release -p git-shim \
#       --target x86_64-unknown-linux-gnu
# SHIM_BIN=<path> measures another build (e.g. one with SHIM_RUSTFLAGS="-C relocation-model=static",
# a non-PIE static binary: ~25% fewer instructions at start, no ASLR for the shim).
# Results: target/bench/shim-results.md (markdown table) and .json; the summary printed last gives
# the ratio and the added milliseconds per call.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
git=${1:-/usr/local/bin/git}
repo=${REPO:-$here}
target=x86_64-unknown-linux-gnu
shim_bin=${SHIM_BIN:-"$here/target/$target/release/git-shim"}
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  (cd "$here" && RUSTFLAGS="-C target-feature=+crt-static ${SHIM_RUSTFLAGS:-}" cargo build -q --release -p git-shim --target $target)
fi
out=${OUT:-"$here/target/bench"}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/etc" "$work/var" "$work/bin"
cat > "$work/etc/policy.toml" <<TOML
session = "bench"
repo = "$repo"
real_git = "$git"
audit_log = "$work/var/audit.log"
state_dir = "$work/state"
TOML
HOME="$work" "$shim_bin" --install "$work/bin" --policy "$work/etc/policy.toml" >/dev/null
# The floor: a static C program that only execs git (the cost of one more exec here).
floor=()
if command -v cc >/dev/null; then
  printf '#include <unistd.h>\nint main(int c, char **v) { v[0] = "%s"; execv(v[0], v); return 127; }\n' "$git" > "$work/floor.c"
  if cc -O2 -static -o "$work/floor" "$work/floor.c" 2>/dev/null; then
    floor=(-n "exec-only rev-parse HEAD" "$work/floor rev-parse HEAD")
  fi
fi
export HOME="$work" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
cd "$repo"
hyperfine -N --warmup 50 --runs "${RUNS:-300}" \
  --export-json "$out/shim-results.json" \
  --export-markdown "$out/shim-results.md" \
  -n "git rev-parse HEAD" "$git rev-parse HEAD" \
  -n "shim rev-parse HEAD" "$work/bin/git rev-parse HEAD" \
  -n "git status" "$git --no-optional-locks status --porcelain" \
  -n "shim status" "$work/bin/git --no-optional-locks status --porcelain" \
  "${floor[@]}" >&2
python3 - "$out/shim-results.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for what in ("rev-parse HEAD", "status"):
    g, s = r["git " + what], r["shim " + what]
    print(f"{what:15s} git {g['mean']*1e3:6.2f} ms  shim {s['mean']*1e3:6.2f} ms  "
          f"+{(s['mean']-g['mean'])*1e3:5.2f} ms (median +{(s['median']-g['median'])*1e3:5.2f}, "
          f"min +{(s['min']-g['min'])*1e3:5.2f})  ratio {s['mean']/g['mean']:.2f}")
f = r.get("exec-only rev-parse HEAD")
if f:
    g = r["git rev-parse HEAD"]
    print(f"floor: a static C exec-only wrapper adds +{(f['mean']-g['mean'])*1e3:5.2f} ms "
          f"(median +{(f['median']-g['median'])*1e3:5.2f}, min +{(f['min']-g['min'])*1e3:5.2f}) on rev-parse HEAD")
PY
echo "audit lines written: $(wc -l < "$work/var/audit.log")"

#!/usr/bin/env bash
# Overhead per call of git-shim against the real git, measured in one hyperfine run:
# `git rev-parse HEAD` and `git status` on this repository's own checkout (or $REPO).
#
#   benches/shim.sh [GIT]          # GIT defaults to /usr/local/bin/git
#
# The shim is built as a static binary first (the hot path is process start-up):
#   RUSTFLAGS="-C target-feature=+crt-static" cargo build --release -p git-shim \
#       --target x86_64-unknown-linux-gnu
# Results: benches/shim-results.md (markdown table) and .json; the summary printed last gives
# the ratio and the added milliseconds per call.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
git=${1:-/usr/local/bin/git}
repo=${REPO:-$here}
target=x86_64-unknown-linux-gnu
shim_bin="$here/target/$target/release/git-shim"
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  (cd "$here" && RUSTFLAGS="-C target-feature=+crt-static" cargo build -q --release -p git-shim --target $target)
fi
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
export HOME="$work" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
cd "$repo"
hyperfine -N --warmup 50 --runs "${RUNS:-300}" \
  --export-json "$here/benches/shim-results.json" \
  --export-markdown "$here/benches/shim-results.md" \
  -n "git rev-parse HEAD" "$git rev-parse HEAD" \
  -n "shim rev-parse HEAD" "$work/bin/git rev-parse HEAD" \
  -n "git status" "$git --no-optional-locks status --porcelain" \
  -n "shim status" "$work/bin/git --no-optional-locks status --porcelain" >&2
python3 - "$here/benches/shim-results.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for what in ("rev-parse HEAD", "status"):
    g, s = r["git " + what], r["shim " + what]
    print(f"{what:15s} git {g['mean']*1e3:6.2f} ms  shim {s['mean']*1e3:6.2f} ms  "
          f"+{(s['mean']-g['mean'])*1e3:5.2f} ms (median +{(s['median']-g['median'])*1e3:5.2f} ms)  ratio {s['mean']/g['mean']:.2f}")
PY
echo "audit lines written: $(wc -l < "$work/var/audit.log")"

#!/usr/bin/env bash
# Commit scan on real, merge-heavy history against `git log --name-only` over the same range,
# interleaved (git, scan, git, scan, …) so that both see the same machine load; the ratio is
# taken per round and the median reported. Peak RSS from /usr/bin/time -v.
#
#   benches/scan-real.sh GIT_DIR [PIN_REV] [ROUNDS]
#
# GIT_DIR: a bare clone with one branch `main` (scan-bench pins refs/heads/main). PIN_REV
# (default main~2500) is where the branch stood at the pin; the range is PIN_REV..main.
# For git.git: `fetch github:git/git` (a local snapshot), then
#   git clone -q --bare --no-tags --single-branch -b master SNAPSHOT /tmp/gg.git
#   git -C /tmp/gg.git branch -m master main && git -C /tmp/gg.git symbolic-ref HEAD refs/heads/main
# (never commit the clone). Environment: GIT (default /usr/local/bin/git), THREADS (2),
# BENCH (a scan-bench binary; default: built here, release).
set -euo pipefail
REPO=${1:?usage: $0 GIT_DIR [PIN_REV] [ROUNDS]}
PIN_REV=${2:-main~2500}
ROUNDS=${3:-7}
GIT=${GIT:-/usr/local/bin/git}
THREADS=${THREADS:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${BENCH:-}" ]; then
  echo "building scan-bench (release)…" >&2
  cargo build -q --release -p gitward --example scan-bench --manifest-path "$ROOT/Cargo.toml"
  BENCH=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/scan-bench
fi
PIN=$($GIT -C "$REPO" rev-parse "$PIN_REV")
N=$($GIT -C "$REPO" rev-list --count "$PIN..main")
M=$($GIT -C "$REPO" rev-list --count --merges "$PIN..main")
echo "range $PIN..main: $N commits, $M merges" >&2
echo "scan: $("$BENCH" "$REPO" "$PIN" "$THREADS")" >&2
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for i in $(seq "$ROUNDS"); do
  /usr/bin/time -f "git %e %U %M" -a -o "$OUT" \
    "$GIT" -C "$REPO" log --format=%H --name-only --no-renames --diff-merges=first-parent "$PIN..main" >/dev/null
  /usr/bin/time -f "scan %e %U %M" -a -o "$OUT" "$BENCH" "$REPO" "$PIN" "$THREADS" >/dev/null
done
python3 - "$OUT" "$N" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.split()[:1] in (["git"], ["scan"])]
n = int(sys.argv[2])
g = [r for r in rows if r[0] == "git"]; s = [r for r in rows if r[0] == "scan"]
ratios = [float(a[1]) / float(b[1]) for a, b in zip(g, s)]
for name, rs in (("git log --name-only", g), ("gitward scan", s)):
    wall = [float(r[1]) for r in rs]; user = [float(r[2]) for r in rs]; rss = [int(r[3]) for r in rs]
    print(f"{name:20s} wall median {statistics.median(wall):.3f} s (min {min(wall):.3f})  "
          f"user median {statistics.median(user):.3f} s  peak RSS {max(rss)/1024:.0f} MiB  "
          f"{n/statistics.median(wall):8.0f} commits/s")
print(f"speed vs git (git wall / scan wall, per round): median {statistics.median(ratios):.2f}x, "
      f"min {min(ratios):.2f}x, max {max(ratios):.2f}x over {len(ratios)} rounds")
PY

#!/usr/bin/env bash
# Commit-scan benchmark: gitward::scan against `git log --name-only` over the same range.
#
#   benches/scan.sh            10,000-commit range on a ~3,000-file tree (hyperfine, 5 runs;
#                              peak RSS of git log and the scan)
#   benches/scan.sh big        100,000-commit push: wall time and peak RSS (VmHWM)
#   benches/scan.sh scale      the same repository scanned as pushes of 10k, 25k, 50k, 100k
#                              commits (peak anonymous memory, VmHWM), then 100k with the
#                              commit cap at 50k (the report must say it stopped, exit 2)
#
# Environment: GIT (default /usr/local/bin/git), RUNS (default 5), WORK (scratch folder,
# default a new temp dir, removed at the end unless KEEP=1; `scale` reuses WORK/big), BENCH (a
# scan-bench binary; default: built here, release), CACHE_MIB (the scan's max_cache_bytes in
# MiB), SIZES and ROUNDS (`scale`).
set -euo pipefail
GIT=${GIT:-/usr/local/bin/git}
RUNS=${RUNS:-5}
MODE=${1:-range}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d)}
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT

if [ -z "${BENCH:-}" ]; then
  echo "building scan-bench (release)…" >&2
  cargo build -q --release -p gitward --example scan-bench --manifest-path "$ROOT/Cargo.toml"
  BENCH=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/scan-bench
fi
# CACHE_MIB: another Limits::max_cache_bytes for scan-bench (MiB; default 216).
[ -z "${CACHE_MIB:-}" ] || export SCAN_BENCH_CACHE_MIB=$CACHE_MIB

# Isolate git from the caller's config (after cargo, which needs the real HOME).
export HOME=$WORK/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$WORK/home/gitconfig
mkdir -p "$HOME"; : > "$GIT_CONFIG_GLOBAL"

# peak_rss LABEL CMD...: the largest max RSS of 3 runs (/usr/bin/time -f %M: VmHWM, KiB), in
# MB. VmHWM counts the mapped pack's resident pages; scan-bench's own JSON line also gives its
# anonymous peak.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"


# gen FILES BASE_COMMITS RANGE_COMMITS: a fast-import stream. A tree of FILES files in
# folders of 30, BASE_COMMITS commits, then RANGE_COMMITS more; each commit changes 1-5
# files (a line appended or replaced). Marks: :1.. commits. Deterministic (seeded).
gen() {
python3 - "$@" <<'PY'
import random, sys
files, base, rng_n = map(int, sys.argv[1:4])
r = random.Random(4)
out = sys.stdout.buffer
paths = [f"src/mod{i//30:03d}/sub{(i//10)%3}/file{i:05d}.rs" for i in range(files)]
content = {p: [f"// {p}\n", "fn main() {}\n"] for p in paths}
def data(b):
    out.write(b"data %d\n" % len(b)); out.write(b); out.write(b"\n")
t = 1700000000
total = base + rng_n
for n in range(1, total + 1):
    out.write(b"commit refs/heads/main\nmark :%d\n" % n)
    out.write(b"committer t <t@example.invalid> %d +0000\n" % (t + n))
    data(b"commit %d" % n)
    if n > 1:
        out.write(b"from :%d\n" % (n - 1))
    changed = paths if n == 1 else r.sample(paths, r.randint(1, 5))
    for p in changed:
        lines = content[p]
        if n > 1:
            if len(lines) > 40 and r.random() < 0.5:
                lines[r.randrange(len(lines))] = f"let x{n} = {r.random()};\n"
            else:
                lines.append(f"let y{n} = {r.randrange(10**9)};\n")
        b = "".join(lines).encode()
        out.write(b"M 100644 inline %s\n" % p.encode()); data(b)
    if n == base:
        out.write(b"reset refs/heads/base\nfrom :%d\n" % n)
out.write(b"done\n")
PY
}

make_repo() { # make_repo DIR FILES BASE RANGE
  local dir=$1
  rm -rf "$dir"; $GIT init -q "$dir"
  (cd "$dir" && gen "$2" "$3" "$4" | $GIT fast-import --quiet --done && $GIT repack -adq --depth=50 --window=10 && $GIT symbolic-ref HEAD refs/heads/main)
}

case $MODE in
range)
  REPO=$WORK/range
  echo "generating: 3,000 files, 1,000 base commits + 10,000 in the range…" >&2
  make_repo "$REPO" 3000 1000 10000
  BASE=$($GIT -C "$REPO" rev-parse refs/heads/base)
  N=$($GIT -C "$REPO" rev-list --count base..main)
  GITLOG="$GIT -C $REPO log --format=%H --name-only --no-renames --diff-merges=first-parent base..main"
  echo "range: $N commits; pairs from git log: $($GITLOG | grep -vcE '^([0-9a-f]{40})?$')" >&2
  echo "gitward scan: $($BENCH "$REPO/.git" "$BASE" 2)" >&2
  hyperfine -N -w 1 -r "$RUNS" --export-json "$WORK/hyperfine.json" \
    -n "git log --name-only" "$GITLOG" \
    -n "gitward scan (2 threads)" "$BENCH $REPO/.git $BASE 2" \
    -n "gitward scan (1 thread)" "$BENCH $REPO/.git $BASE 1"
  python3 - "$WORK/hyperfine.json" "$N" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]; n = int(sys.argv[2])
g = res[0]["mean"]
for r in res:
    print(f'{r["command"]:28s} mean {r["mean"]:.3f} s ± {r["stddev"]:.3f}  {n / r["mean"]:9.0f} commits/s  {g / r["mean"]:.2f}× git')
PY
  # shellcheck disable=SC2086
  peak_rss "git log --name-only" $GITLOG
  peak_rss "gitward scan (2 threads)" "$BENCH" "$REPO/.git" "$BASE" 2
  ;;
big)
  REPO=$WORK/big
  echo "generating: 300 files, 1 base commit + 100,000 commits…" >&2
  make_repo "$REPO" 300 1 100000
  BASE=$($GIT -C "$REPO" rev-parse refs/heads/base)
  /usr/bin/time -f "wall %e s, max RSS %M KiB (time -v)" "$BENCH" "$REPO/.git" "$BASE" 2
  ;;
scale)
  REPO=$WORK/big
  if [ ! -d "$REPO/.git" ]; then
    echo "generating: 300 files, 1 base commit + 100,000 commits…" >&2
    make_repo "$REPO" 300 1 100000
  fi
  echo "commits	wall_s	user_s	rss_anon_peak_MB	vm_hwm_MB	rss_file_MB	findings	incomplete	exit"
  T=$(mktemp)
  for N in ${SIZES:-10000 25000 50000 100000}; do
    BASE=$($GIT -C "$REPO" rev-parse "main~$N")
    for r in $(seq "${ROUNDS:-1}"); do
      OUT=$(/usr/bin/time -f "%e %U" -o "$T" "$BENCH" "$REPO/.git" "$BASE" 2)
      python3 -c 'import json,sys; j=json.loads(sys.argv[1]); w,u=open(sys.argv[2]).read().split()[-2:]; print("%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%s\t%s\t%s" % (sys.argv[3], w, u, j["rss_anon_peak_kb"]/1000, j["vm_hwm_kb"]/1000, j["rss_file_kb"]/1000, j["findings"], j["incomplete"], j["exit"]))' "$OUT" "$T" "$N"
    done
  done
  rm -f "$T"
  BASE=$($GIT -C "$REPO" rev-parse "main~100000")
  OUT=$(SCAN_BENCH_MAX_COMMITS=50000 "$BENCH" "$REPO/.git" "$BASE" 2)
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("100000, cap 50000\t-\t-\t%.0f\t%.0f\t%.0f\t%s\t%s" % (j["rss_anon_peak_kb"]/1000, j["vm_hwm_kb"]/1000, j["rss_file_kb"]/1000, j["incomplete"], j["exit"]))' "$OUT"
  ;;
*) echo "usage: $0 [range|big|scale]" >&2; exit 120 ;;
esac

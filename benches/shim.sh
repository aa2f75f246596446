#!/usr/bin/env bash
# Overhead per call of git-shim against the real git, measured in one hyperfine run:
# `git rev-parse HEAD` and `git status` on this repository's own checkout (or $REPO), with the
# floor (a static C program that only execs git) interleaved in the same run.
#
#   benches/shim.sh [GIT]          # GIT defaults to /usr/local/bin/git
#
# The shim measured is the one the README's build produces (`cargo build --release`:
# target/release/git-shim, a static executable at a fixed address where glibc's static libraries are installed, see
# bins/git-shim/build.rs; the line below prints which); SHIM_BIN=<path> measures another build
# (e.g. one made with GITWARD_DYNAMIC=1 in another CARGO_TARGET_DIR).
# BEFORE=<binary> also installs that build (e.g. main's target/release/git-shim, copied aside)
# and measures it in the same run, interleaved, as "before shim".
# SKIP_BUILD=1 measures target/release/git-shim as it is.
# STATIC=1 also builds and measures, in the same run, rustc's own static build for comparison:
#   RUSTFLAGS="-C target-feature=+crt-static" cargo build --release -p git-shim \
#       --target x86_64-unknown-linux-gnu
# Wall clock on a loaded machine is mostly scheduling; the load-independent figure is the
# instruction count (valgrind's callgrind, user space: the shim up to its execve plus git after
# it), printed last when valgrind is installed (perf's hardware counters are not available
# in every VM).
# Results: target/bench/shim-results.md (markdown table) and .json.
set -euo pipefail
# peak_rss LABEL CMD...: the largest max RSS of 3 runs (/usr/bin/time -f %M: VmHWM of the
# process, KiB; a wrapper that execs git is one process with it), printed in MB.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
here=$(cd "$(dirname "$0")/.." && pwd)
git=${1:-/usr/local/bin/git}
repo=${REPO:-$here}
target=x86_64-unknown-linux-gnu
shim_bin=${SHIM_BIN:-"$here/target/release/git-shim"}
static_bin="$here/target/$target/release/git-shim"
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  (cd "$here" && cargo build -q --release -p git-shim)
  if [[ ${STATIC:-0} == 1 ]]; then
    (cd "$here" && RUSTFLAGS="-C target-feature=+crt-static" cargo build -q --release -p git-shim --target $target)
  fi
fi
out=${OUT:-"$here/target/bench"}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/etc" "$work/var" "$work/bin" "$work/sbin"
cat > "$work/etc/policy.toml" <<TOML
session = "bench"
repo = "$repo"
real_git = "$git"
audit_log = "$work/var/audit.log"
state_dir = "$work/state"
TOML
# --install is run under the shim's own name (a copy named git-shim), as a user would.
# A fresh copy each time: --install hard-links it, and cp over a link would rewrite both.
install() { rm -f "$work/git-shim" && cp "$1" "$work/git-shim" && HOME="$work" "$work/git-shim" --install "$2" --policy "$work/etc/policy.toml" >/dev/null; }
install "$shim_bin" "$work/bin"
shims=(-n "shim rev-parse HEAD" "$work/bin/git rev-parse HEAD")
if [[ -n ${BEFORE:-} ]]; then
  mkdir -p "$work/before"
  install "$BEFORE" "$work/before"
  shims+=(-n "before shim rev-parse HEAD" "$work/before/git rev-parse HEAD")
fi
if [[ ${STATIC:-0} == 1 ]]; then
  install "$static_bin" "$work/sbin"
  shims+=(-n "static shim rev-parse HEAD" "$work/sbin/git rev-parse HEAD")
fi
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
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); shim: $(file -b "$shim_bin" | cut -d, -f1-2,4)"
hyperfine -N --warmup 50 --runs "${RUNS:-300}" \
  --export-json "$out/shim-results.json" \
  --export-markdown "$out/shim-results.md" \
  -n "git rev-parse HEAD" "$git rev-parse HEAD" \
  "${shims[@]}" "${floor[@]}" \
  -n "git status" "$git --no-optional-locks status --porcelain" \
  -n "shim status" "$work/bin/git --no-optional-locks status --porcelain" >&2
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out/shim-results.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
def added(x, g):
    return (f"+{(x['mean']-g['mean'])*1e3:5.2f} ms (median +{(x['median']-g['median'])*1e3:5.2f}, "
            f"min +{(x['min']-g['min'])*1e3:5.2f})")
g = r["git rev-parse HEAD"]
print(f"git rev-parse HEAD: mean {g['mean']*1e3:.2f} ms, median {g['median']*1e3:.2f}, min {g['min']*1e3:.2f}")
for name in ("exec-only rev-parse HEAD", "before shim rev-parse HEAD", "shim rev-parse HEAD",
             "static shim rev-parse HEAD"):
    if name in r:
        print(f"{name:27s} {added(r[name], g)}  ratio {r[name]['mean']/g['mean']:.2f}")
gs, ss = r["git status"], r["shim status"]
print(f"{'shim status':27s} {added(ss, gs)}  ratio {ss['mean']/gs['mean']:.2f}")
PY
peak_rss "git rev-parse HEAD" "$git" rev-parse HEAD
peak_rss "shim rev-parse HEAD" "$work/bin/git" rev-parse HEAD
[[ -n ${BEFORE:-} ]] && peak_rss "before shim rev-parse HEAD" "$work/before/git" rev-parse HEAD
[[ -n ${floor[*]} ]] && peak_rss "exec-only rev-parse HEAD" "$work/floor" rev-parse HEAD
peak_rss "git status" "$git" --no-optional-locks status --porcelain
peak_rss "shim status" "$work/bin/git" --no-optional-locks status --porcelain
# CPU time (task-clock: the wrapper and the git it execs are one task) and minor page faults
# per call, in interleaved rounds (perf stat -r 50 per command per round; CPU_ROUNDS, default
# 10): less sensitive to the neighbours' load than the wall clock. The median of the rounds.
if command -v perf >/dev/null && [[ ${CPU_ROUNDS:-10} -gt 0 ]]; then
  cpu=()
  cpu+=("git:$git")
  [[ -n ${floor[*]} ]] && cpu+=("exec-only:$work/floor")
  [[ -n ${BEFORE:-} ]] && cpu+=("before shim:$work/before/git")
  cpu+=("shim:$work/bin/git")
  [[ ${STATIC:-0} == 1 ]] && cpu+=("static shim:$work/sbin/git")
  for ((round = 0; round < ${CPU_ROUNDS:-10}; round++)); do
    for pair in "${cpu[@]}"; do
      perf stat -x, -e task-clock,minor-faults -r 50 -o "$work/perf" "${pair#*:}" rev-parse HEAD >/dev/null
      awk -F, -v n="${pair%%:*}" '$3 == "task-clock" {t = $1} $3 == "minor-faults" {f = $1}
        END {printf "%s\t%.1f\t%.1f\n", n, t * 1000, f}' "$work/perf" >> "$work/cpu.tsv"
    done
  done
  echo "CPU per call, rev-parse HEAD (task-clock, median of ${CPU_ROUNDS:-10} interleaved rounds of 50; load $(cut -d' ' -f1 /proc/loadavg)):"
  python3 - "$work/cpu.tsv" <<'PY'
import sys, statistics, collections
t, f = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[1]):
    n, us, flt = line.rstrip("\n").split("\t")
    t[n].append(float(us)); f[n].append(float(flt))
g = statistics.median(t["git"])
for n in t:
    m = statistics.median(t[n])
    extra = "" if n == "git" else f" (+{m - g:.0f} µs over git)"
    print(f"  {n:12s} {m:7.0f} µs{extra}, minor faults {statistics.median(f[n]):.0f}")
PY
fi
# Instruction counts (user space), load-independent: the wrapper up to its execve (callgrind
# dumps there, file cg.<pid>.1) and git after it (cg.<pid>).
if command -v valgrind >/dev/null; then
  ir() {
    local d; d=$(mktemp -d)
    valgrind --tool=callgrind --trace-children=yes --dump-before=execve \
      --callgrind-out-file="$d/cg.%p" "$@" >/dev/null 2>&1
    local pre post
    pre=$(find "$d" -name 'cg.*.1' -exec cat {} + | awk '/^summary:/ {s += $2} END {print s + 0}')
    post=$(find "$d" -name 'cg.*' ! -name '*.1' -exec cat {} + | awk '/^summary:/ {s += $2} END {print s + 0}')
    echo "$pre $post"
    rm -rf "$d"
  }
  read -r _ base < <(ir "$git" rev-parse HEAD)
  echo "instructions (callgrind), rev-parse HEAD: git alone $base"
  for pair in "exec-only:$work/floor" "before shim:$work/before/git" "shim:$work/bin/git" \
    "static shim:$work/sbin/git"; do
    name=${pair%%:*} bin=${pair#*:}
    [[ -x $bin ]] || continue
    read -r pre g < <(ir "$bin" rev-parse HEAD)
    echo "  $name: +$((pre + g - base)) = its own $pre + git's extra $((g - base))"
  done
fi
echo "audit lines written: $(wc -l < "$work/var/audit.log")"

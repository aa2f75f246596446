#!/usr/bin/env bash
# wt-check check on a clone of git.git (>= 1,000 refs) with 20 linked worktrees in the
# session folder, against `git worktree list --porcelain` in the same hyperfine run
# (issue 13, goal 2: within 3x of that git command).
#
#   benches/wt-check-gitgit.sh [GIT]      (default /usr/local/bin/git, else /usr/bin/git)
#
# GITGIT=<repository to clone>  default /work/.mirror/git+git/repo (any git.git clone)
# KEEP=<dir>      build the repository in <dir> and keep it (re-used if <dir>/state exists)
# CALLGRIND=1     also print callgrind instruction counts of `check` and `check --no-scan`
# Prints CPU time (user + system) next to wall time: on a shared machine the wall time is
# scheduling noise. `check` is run once before the measurement: it records the listings of
# the work trees' folders (`<state>.walk`), which every later check reuses.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
git=${1:-$( [ -x /usr/local/bin/git ] && echo /usr/local/bin/git || echo /usr/bin/git )}
src=${GITGIT:-/work/.mirror/git+git/repo}
command -v hyperfine >/dev/null || { echo "hyperfine is required" >&2; exit 2; }
cargo build --release -q -p wt-check --manifest-path "$here/Cargo.toml"
wt="${CARGO_TARGET_DIR:-$here/target}/release/wt-check"
if [ -n "${KEEP:-}" ]; then
	tmp=$KEEP
	mkdir -p "$tmp"
else
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
fi
export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$tmp/home/.gitconfig"
state="$tmp/state/s1.json"
if [ ! -e "$state" ]; then
	mkdir -p "$HOME" "$tmp/state" && : >"$GIT_CONFIG_GLOBAL"
	"$git" clone -q "$src" "$tmp/gg"
	for i in $(seq -w 1 20); do
		"$git" -C "$tmp/gg" worktree add -q --detach "$tmp/gg-worktrees/s1/wt$i"
	done
	"$wt" pin --state "$state" --session s1 "$tmp/gg" >/dev/null
	sleep 1.2 # past the listing record's racy margin
fi
echo "refs: $("$git" -C "$tmp/gg" for-each-ref | wc -l), worktrees listed by git: $("$git" -C "$tmp/gg" worktree list --porcelain | grep -c '^worktree ')"
"$wt" check --state "$state" "$tmp/gg" >/dev/null || { echo "check is not clean on an honest repository" >&2; exit 1; }
if [ -n "${CALLGRIND:-}" ]; then
	for args in "check" "check --no-scan"; do
		# shellcheck disable=SC2086
		n=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$wt" $args --state "$state" "$tmp/gg" 2>&1 >/dev/null |
			sed -n 's/.*Collected : //p')
		printf 'callgrind instructions, wt-check %-16s %s\n' "$args:" "$n"
	done
	n=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$git" -C "$tmp/gg" worktree list --porcelain 2>&1 >/dev/null |
		sed -n 's/.*Collected : //p')
	printf 'callgrind instructions, git worktree list          %s\n' "$n"
fi
for c in "$git -C $tmp/gg worktree list --porcelain" "$wt check --state $state $tmp/gg" "$wt check --no-scan --state $state $tmp/gg"; do
	# shellcheck disable=SC2086
	/usr/bin/time -f "peak RSS %M KiB: $c" $c >/dev/null
done 2>&1 | sed "s|$tmp|\$tmp|g"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N --warmup 3 --min-runs 20 --export-json "$tmp/bench.json" \
	-n "git worktree list --porcelain" "$git -C $tmp/gg worktree list --porcelain" \
	-n "wt-check check" "$wt check --state $state $tmp/gg" \
	-n "wt-check check --no-scan" "$wt check --no-scan --state $state $tmp/gg" >/dev/null
python3 - "$tmp/bench.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
g = next(x for x in res if x["command"].startswith("git "))
gc = g["user"] + g["system"]
print(f"{'command':32s} {'mean':>9s} {'min':>9s} {'user':>8s} {'sys':>8s}   ratio to git (mean / min / cpu)")
for x in res:
    cpu = x["user"] + x["system"]
    print(f"{x['command']:32s} {x['mean']*1e3:7.1f}ms {x['min']*1e3:7.1f}ms {x['user']*1e3:6.1f}ms {x['system']*1e3:6.1f}ms"
          f"   {x['mean']/g['mean']:5.2f}x / {x['min']/g['min']:5.2f}x / {cpu/gc:5.2f}x")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# wt-check check on a clone of git.git (>= 1,000 refs) with 20 linked worktrees, against
# `git worktree list --porcelain` in the same hyperfine run (issue 13, goal 2: within 3x of
# that git command), in two layouts:
#   gg  all 20 worktrees in the checked session's folder (gg-worktrees/s1/wtNN): the walk
#       looks at every folder of all 21 checkouts;
#   gs  one worktree per session folder (gs-worktrees/sNN/wt), the session s01 checked: the
#       agent's session is one worktree, the other 19 belong to other sessions; the walk
#       looks at the main work tree and the session's one worktree.
#
#   benches/wt-check-gitgit.sh [GIT]      (default /usr/local/bin/git, else /usr/bin/git)
#
# GITGIT=<repository to clone>  default /work/.mirror/git+git/repo (any git.git clone)
# KEEP=<dir>      build the repository in <dir> and keep it (re-used if <dir>/state exists)
# CALLGRIND=1     also print callgrind instruction counts of `check` and `check --no-scan`
# Prints CPU time (user + system) next to wall time: on a shared machine the wall time is
# scheduling noise. `check` is run once before the measurement: it records the listings of
# the work trees' folders (`<state>.walk`), the verdicts on the indexes (`<state>.index`) and
# the key of the commit scan's sources with no ref moved (`<state>.refs`), which every later
# check reuses.
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
state="$tmp/state/s1.json"   # layout gg, session s1
sstate="$tmp/state/s01.json" # layout gs, session s01
if [ ! -e "$state" ] || [ ! -e "$sstate" ]; then
	mkdir -p "$HOME" "$tmp/state" && : >"$GIT_CONFIG_GLOBAL"
	[ -d "$tmp/gg" ] || "$git" clone -q "$src" "$tmp/gg"
	[ -d "$tmp/gs" ] || "$git" clone -q "$src" "$tmp/gs"
	for i in $(seq -w 1 20); do
		[ -e "$tmp/gg-worktrees/s1/wt$i" ] || "$git" -C "$tmp/gg" worktree add -q --detach "$tmp/gg-worktrees/s1/wt$i"
		[ -e "$tmp/gs-worktrees/s$i/wt" ] || "$git" -C "$tmp/gs" worktree add -q --detach "$tmp/gs-worktrees/s$i/wt"
	done
	"$wt" pin --state "$state" --session s1 "$tmp/gg" >/dev/null
	"$wt" pin --state "$sstate" --session s01 "$tmp/gs" >/dev/null
	sleep 1.2 # past the racy margin of the listing record and the index verdicts
fi
for r in gg gs; do
	echo "$r: refs: $("$git" -C "$tmp/$r" for-each-ref | wc -l), worktrees listed by git: $("$git" -C "$tmp/$r" worktree list --porcelain | grep -c '^worktree ')"
done
"$wt" check --state "$state" "$tmp/gg" >/dev/null || { echo "check is not clean on an honest repository (gg)" >&2; exit 1; }
"$wt" check --state "$sstate" "$tmp/gs" >/dev/null || { echo "check is not clean on an honest repository (gs)" >&2; exit 1; }
if [ -n "${CALLGRIND:-}" ]; then
	for run in "gg check" "gg check --no-scan" "gs check" "gs check --no-scan"; do
		# shellcheck disable=SC2086
		set -- $run
		r=$1
		shift
		st=$state
		[ "$r" = gs ] && st=$sstate
		n=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$wt" "$@" --state "$st" "$tmp/$r" 2>&1 >/dev/null |
			sed -n 's/.*Collected : //p')
		printf 'callgrind instructions, %s wt-check %-16s %s\n' "$r" "$*:" "$n"
	done
	n=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$git" -C "$tmp/gg" worktree list --porcelain 2>&1 >/dev/null |
		sed -n 's/.*Collected : //p')
	printf 'callgrind instructions, git worktree list             %s\n' "$n"
fi
for c in "$git -C $tmp/gg worktree list --porcelain" "$wt check --state $state $tmp/gg" "$wt check --no-scan --state $state $tmp/gg" \
	"$git -C $tmp/gs worktree list --porcelain" "$wt check --state $sstate $tmp/gs"; do
	# shellcheck disable=SC2086
	/usr/bin/time -f "peak RSS %M KiB: $c" $c >/dev/null
done 2>&1 | sed "s|$tmp|\$tmp|g"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N --warmup 3 --min-runs 20 --export-json "$tmp/bench.json" \
	-n "gg: git worktree list --porcelain" "$git -C $tmp/gg worktree list --porcelain" \
	-n "gg: wt-check check" "$wt check --state $state $tmp/gg" \
	-n "gg: wt-check check --no-scan" "$wt check --no-scan --state $state $tmp/gg" \
	-n "gs: git worktree list --porcelain" "$git -C $tmp/gs worktree list --porcelain" \
	-n "gs: wt-check check" "$wt check --state $sstate $tmp/gs" \
	-n "gs: wt-check check --no-scan" "$wt check --no-scan --state $sstate $tmp/gs" >/dev/null
python3 - "$tmp/bench.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
print(f"{'command':36s} {'mean':>9s} {'min':>9s} {'user':>8s} {'sys':>8s}   ratio to its layout's git (mean / min / cpu)")
for x in res:
    layout = x["command"].split(":")[0]
    g = next(y for y in res if y["command"] == f"{layout}: git worktree list --porcelain")
    cpu, gc = x["user"] + x["system"], g["user"] + g["system"]
    print(f"{x['command']:36s} {x['mean']*1e3:7.1f}ms {x['min']*1e3:7.1f}ms {x['user']*1e3:6.1f}ms {x['system']*1e3:6.1f}ms"
          f"   {x['mean']/g['mean']:5.2f}x / {x['min']/g['min']:5.2f}x / {cpu/gc:5.2f}x")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# wt-check check on a repository with 200 linked worktrees and 20 submodules, against
# `git worktree list --porcelain` in the same hyperfine run (issue 3, item 7).
# Goal: under 50 ms, and within 3x of that git command.
#
#   benches/wt-check.sh [GIT]      (default /usr/local/bin/git, else /usr/bin/git)
#
# Builds wt-check with --release. Isolated from the caller's git config (temp HOME).
# KEEP=<dir>      build the repository in <dir> and keep it (re-used if <dir>/state exists)
# CALLGRIND=1     also print callgrind instruction counts (stable on a noisy machine) of
#                 `check` and `check --no-scan`; needs valgrind
set -euo pipefail
# peak_rss LABEL CMD...: the largest max RSS of 3 runs (/usr/bin/time -f %M: VmHWM of the
# process, KiB; a wrapper that execs git is one process with it), printed in MB.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
here=$(cd "$(dirname "$0")/.." && pwd)
git=${1:-$( [ -x /usr/local/bin/git ] && echo /usr/local/bin/git || echo /usr/bin/git )}
command -v hyperfine >/dev/null || { echo "hyperfine is required" >&2; exit 2; }
cargo build --release -q -p wt-check --manifest-path "$here/Cargo.toml"
wt="$here/target/release/wt-check"
if [ -n "${KEEP:-}" ]; then
	tmp=$KEEP
	mkdir -p "$tmp"
else
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
fi
export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$tmp/home/.gitconfig"
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.invalid GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.invalid
g() { "$git" -c protocol.file.allow=always -c init.defaultBranch=main "$@"; }
state="$tmp/state/s1.json"
if [ ! -e "$state" ]; then
mkdir -p "$HOME" && : >"$GIT_CONFIG_GLOBAL"
g init -q "$tmp/sub"
echo s >"$tmp/sub/f" && g -C "$tmp/sub" add f && g -C "$tmp/sub" commit -q -m s
g init -q "$tmp/proj"
for i in $(seq 1 50); do echo "$i" >"$tmp/proj/file$i"; done
g -C "$tmp/proj" add . && g -C "$tmp/proj" commit -q -m init
for i in $(seq -w 1 20); do g -C "$tmp/proj" submodule add -q "$tmp/sub" "mods/sub$i"; done
g -C "$tmp/proj" commit -q -m subs
for i in $(seq -w 1 200); do
	if [ "$i" -le 100 ]; then dir="$tmp/proj-worktrees/s1/wt$i"; else dir="$tmp/others/wt$i"; fi
	g -C "$tmp/proj" worktree add -q --detach "$dir" 2>/dev/null
done
mkdir -p "$tmp/state"
"$wt" pin --state "$state" --session s1 "$tmp/proj"
fi
echo "entries in the state file: $(grep -c '"type"' "$state"), size $(du -h "$state" | cut -f1)"
"$wt" check --state "$state" "$tmp/proj" >/dev/null || { echo "check is not clean on an honest repository" >&2; exit 1; }
"$git" -C "$tmp/proj" worktree list --porcelain | grep -c '^worktree ' | sed 's/^/worktrees listed by git: /'
if [ -n "${CALLGRIND:-}" ]; then
	for args in "check" "check --no-scan"; do
		# shellcheck disable=SC2086
		n=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$wt" $args --state "$state" "$tmp/proj" 2>&1 >/dev/null |
			sed -n 's/.*Collected : //p')
		printf 'callgrind instructions, wt-check %-16s %s\n' "$args:" "$n"
	done
fi
hyperfine -N --warmup 5 --min-runs 30 --export-json "$tmp/bench.json" \
	-n "git worktree list --porcelain" "$git -C $tmp/proj worktree list --porcelain" \
	-n "wt-check check" "$wt check --state $state $tmp/proj" \
	-n "wt-check check --no-scan" "$wt check --no-scan --state $state $tmp/proj" \
	-n "wt-check check --restore" "$wt check --restore --state $state $tmp/proj"
python3 - "$tmp/bench.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
g = next(x for x in res if x["command"].startswith("git "))
print(f"{'command':34s} {'mean':>9s} {'min':>9s} {'cpu':>9s}   ratio to git (mean / min / cpu)")
for x in res:
    cpu = x["user"] + x["system"]
    gc = g["user"] + g["system"]
    print(f"{x['command']:34s} {x['mean']*1e3:7.1f}ms {x['min']*1e3:7.1f}ms {cpu*1e3:7.1f}ms"
          f"   {x['mean']/g['mean']:5.2f}x / {x['min']/g['min']:5.2f}x / {cpu/gc:5.2f}x")
PY
peak_rss "git worktree list --porcelain" "$git" -C "$tmp/proj" worktree list --porcelain
peak_rss "wt-check check" "$wt" check --state "$state" "$tmp/proj"
peak_rss "wt-check check --no-scan" "$wt" check --no-scan --state "$state" "$tmp/proj"

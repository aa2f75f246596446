#!/usr/bin/env bash
# safe-git status against git status on a generated repository of 10,000 files with includes and
# a few .gitattributes, both in one hyperfine run; plus the cost of the plan alone
# (`safe-git --explain`: probe, layout, config enumeration, no git).
#
#   benches/safe-git.sh [GIT]        (default GIT: /usr/local/bin/git)
#   BEFORE=/tmp/safe-git.old benches/safe-git.sh   also counts another build's instructions in
#                                                   the same run (before/after of a change)
#
# safe-git's gitlink cache lives under the bench's own HOME (removed at the end); the counts are
# taken on an index older than the cache's 2 s racy window, and once on a cache miss.
#
# Needs: hyperfine, a release build (`cargo build --release -p safe-git`).
set -euo pipefail
# peak_rss LABEL CMD...: the largest max RSS of 3 runs (/usr/bin/time -f %M: VmHWM of the
# process, KiB; a wrapper that execs git is one process with it), printed in MB.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
here=$(cd "$(dirname "$0")/.." && pwd)
git=${1:-/usr/local/bin/git}
safe_git=$here/target/release/safe-git
[ -x "$safe_git" ] || { echo "build first: cargo build --release -p safe-git" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home LC_ALL=C
mkdir -p "$HOME"
printf '[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n' > "$HOME/.gitconfig"
repo=$work/repo
"$git" init -q "$repo"
cd "$repo"
# 10,000 files in 100 folders, a few .gitattributes, three include files (one conditional).
for d in $(seq -w 0 99); do
  mkdir -p "d$d"
  for f in $(seq -w 0 99); do echo "file $d/$f" > "d$d/f$f.txt"; done
done
printf '*.txt text\n*.bin binary\n' > .gitattributes
for d in 07 42 77; do printf '*.dat -diff\n' > "d$d/.gitattributes"; done
printf '[core]\n\tautocrlf = false\n[include]\n\tpath = ../inc-b.cfg\n' > "$work/inc-a.cfg"
printf '[color]\n\tui = auto\n' > "$work/inc-b.cfg"
printf '[diff]\n\trenames = true\n' > "$work/inc-c.cfg"
"$git" config include.path "$work/inc-a.cfg"
"$git" config "includeIf.gitdir:$repo/.git.path" "$work/inc-c.cfg"
"$git" add -A >/dev/null
"$git" commit -qm "10k files"
"$git" status >/dev/null  # warm the index
sleep 3  # older than the gitlink cache's racy window (2 s): the warm-up calls write its entry

echo "git: $("$git" version); files: $("$git" ls-files | wc -l); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N --warmup 5 --runs ${RUNS:-40} \
  -n "git status" "$git status" \
  -n "safe-git status" "$safe_git --git $git status" \
  -n "safe-git --explain status (plan only)" "$safe_git --git $git --explain status" \
  -n "git rev-parse HEAD" "$git rev-parse HEAD" \
  -n "safe-git rev-parse HEAD" "$safe_git --git $git rev-parse HEAD" \
  --export-json "$work/hyperfine.json" >&2
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/hyperfine.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
g, s, p = r["git status"], r["safe-git status"], r["safe-git --explain status (plan only)"]
print(f"git status            {g['mean']*1000:7.2f} ms ± {g['stddev']*1000:.2f}")
print(f"safe-git status       {s['mean']*1000:7.2f} ms ± {s['stddev']*1000:.2f}   ratio {s['mean']/g['mean']:.3f}x (median {s['median']/g['median']:.3f}x)")
print(f"plan only (--explain) {p['mean']*1000:7.2f} ms ± {p['stddev']*1000:.2f}")
g, s = r["git rev-parse HEAD"], r["safe-git rev-parse HEAD"]
print(f"rev-parse HEAD        git {g['mean']*1000:.2f} ms, safe-git {s['mean']*1000:.2f} ms: +{(s['mean']-g['mean'])*1000:.2f} ms "
      f"(median +{(s['median']-g['median'])*1000:.2f}, min +{(s['min']-g['min'])*1000:.2f})")
PY
peak_rss "git status" "$git" status
peak_rss "safe-git status" "$safe_git" --git "$git" status
peak_rss "safe-git --explain status (plan only)" "$safe_git" --git "$git" --explain status
peak_rss "git rev-parse HEAD" "$git" rev-parse HEAD
peak_rss "safe-git rev-parse HEAD" "$safe_git" --git "$git" rev-parse HEAD
# Instruction counts (valgrind's callgrind, user space, every process of the call summed):
# load-independent, unlike the wall clock on a shared machine.
if command -v valgrind >/dev/null; then
  # The BEFORE build's count for the same call, as " (before: N, +D)".
  before() {
    [ -n "${BEFORE:-}" ] || return 0
    local g=$1 b; shift
    # shellcheck disable=SC2086
    b=$(ir "$BEFORE" --git "$git" "$@")
    echo " (before: $b, +$((b - g)), $(python3 -c "print(f'{$b/$g:.3f}')")x)"
  }
  ir() {
    local d; d=$(mktemp -d)
    valgrind --tool=callgrind --trace-children=yes --dump-before=execve \
      --callgrind-out-file="$d/cg.%p" "$@" >/dev/null 2>&1
    cat "$d"/cg.* | awk '/^summary:/ {s += $2} END {print s + 0}'
    rm -rf "$d"
  }
  # The gitlink cache (lib/src/safegit/gitlink_cache.rs) answers only for an index whose ctime
  # is older than 2 s: wait that long after git last wrote it, and let one call write the entry.
  settle() { sleep 3; "$safe_git" --git "$git" status >/dev/null; }
  settle
  for what in status "rev-parse HEAD"; do
    # shellcheck disable=SC2086
    g=$(ir "$git" $what); s=$(ir "$safe_git" --git "$git" $what)
    echo "instructions, $what: git $g, safe-git $s (+$((s - g)), $(python3 -c "print(f'{$s/$g:.3f}')")x)$(before "$g" $what)"
  done
  # A cache miss: the index changed a moment ago (chmod moves its ctime), so it is scanned and,
  # being racy, not cached.
  chmod 644 .git/index
  g=$(ir "$git" status); s=$(ir "$safe_git" --git "$git" status)
  echo "instructions, status, index changed < 2 s ago (scanned, not cached): git $g, safe-git $s (+$((s - g)), $(python3 -c "print(f'{$s/$g:.3f}')")x)"
  # The second goal's repository: 50 files and 20 linked worktrees.
  wt=$work/wt20
  "$git" init -q "$wt"
  for i in $(seq 1 50); do echo "$i" > "$wt/f$i"; done
  "$git" -C "$wt" add -A && "$git" -C "$wt" commit -qm 50
  for i in $(seq 1 20); do "$git" -C "$wt" worktree add -q "$work/wt20-linked/$i" -b "b$i"; done
  cd "$wt"
  "$git" status >/dev/null
  settle
  for what in status "rev-parse HEAD"; do
    # shellcheck disable=SC2086
    g=$(ir "$git" $what); s=$(ir "$safe_git" --git "$git" $what)
    echo "instructions, 20 linked worktrees, $what: git $g, safe-git $s (+$((s - g)), $(python3 -c "print(f'{$s/$g:.3f}')")x)$(before "$g" $what)"
  done
  # The same goal on the 10,000-file repository: 20 linked worktrees added to it (not checked
  # out: the main worktree's status never looks at their files, and 200,000 files take long).
  for i in $(seq 1 20); do "$git" -C "$repo" worktree add -q --no-checkout "$work/repo-linked/$i" -b "w$i"; done
  cd "$repo"
  "$git" status >/dev/null
  settle
  for what in status "rev-parse HEAD"; do
    # shellcheck disable=SC2086
    g=$(ir "$git" $what); s=$(ir "$safe_git" --git "$git" $what)
    echo "instructions, 10,000 files + 20 linked worktrees, $what: git $g, safe-git $s (+$((s - g)), $(python3 -c "print(f'{$s/$g:.3f}')")x)$(before "$g" $what)"
  done
fi

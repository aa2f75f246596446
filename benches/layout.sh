#!/usr/bin/env bash
# Layout checks vs the git commands that answer the same question, measured in the same run.
# A scratch repository 8 folders deep with 5 linked worktrees (one of them relative) and a
# submodule; the start folder is 4 folders inside a linked worktree.
# Usage: benches/layout.sh [git] [runs]   (default /usr/local/bin/git, 200 runs)
# Builds the example in the dev profile unless PROFILE=release is set.
set -euo pipefail
# peak_rss LABEL CMD...: the largest max RSS of 3 runs (/usr/bin/time -f %M, KiB), in MB.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
GIT=${1:-/usr/local/bin/git}
N=${2:-200}
PROFILE=${PROFILE:-dev}
cd "$(dirname "$0")/.."
cargo build -q -p gitward --example layout_bench --profile "$PROFILE"
dir=$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")
BIN=target/$dir/examples/layout_bench
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export HOME=$TMP/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.invalid GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.invalid
mkdir -p "$HOME"
R=$TMP/a/b/c/d/e/f/g/repo
mkdir -p "$R" && cd "$R"
"$GIT" init -q && echo x >f && "$GIT" add f && "$GIT" commit -qm init
"$GIT" init -q "$TMP/sub" && (cd "$TMP/sub" && echo y >y && "$GIT" add y && "$GIT" commit -qm s)
"$GIT" -c protocol.file.allow=always submodule add -q "$TMP/sub" sub && "$GIT" commit -qm sub
for i in 1 2 3 4 5; do "$GIT" worktree add -q "../wt$i"; done
mkdir -p "../wt1/x/y/z/w"
cd - >/dev/null
echo "git: $("$GIT" --version)   profile: $PROFILE   kernel: $(uname -r)"
"$BIN" "$GIT" "$R/../wt1/x/y/z/w" "$R/.git" "$N"
(cd "$R/../wt1/x/y/z/w" && peak_rss "git rev-parse --absolute-git-dir" "$GIT" rev-parse --absolute-git-dir &&
  peak_rss "git worktree list --porcelain" "$GIT" worktree list --porcelain)

#!/bin/sh
# Install the five gitward binaries, their man pages (one per subcommand) and shell
# completions under one prefix:
#
#   ./install.sh                  # into ~/.cargo (bin/, share/man/man1/, share/…/completions/)
#   ./install.sh --root /usr/local
#
# The binaries come from `cargo install --locked --path bins/<tool>`, sharing one target
# folder so the library is built once. Reinstalling replaces them in place; afterwards run
# `git-shim --install DIR --policy FILE` again for every session (or let agent-shell do it:
# it reinstalls a shim that differs from the git-shim beside it).
set -eu
cd "$(dirname "$0")"
root="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}"
case "${1:-}" in
--root) [ $# -eq 2 ] || { echo "usage: $0 [--root DIR]" >&2; exit 120; }; root=$2 ;;
'') ;;
*) echo "usage: $0 [--root DIR]" >&2; exit 120 ;;
esac
tools="safe-git wt-check git-shim agent-shell settings-watch"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
for t in $tools; do
    cargo install --quiet --locked --force --path "bins/$t" --root "$root"
done
man="$root/share/man/man1"
bash="$root/share/bash-completion/completions"
zsh="$root/share/zsh/site-functions"
fish="$root/share/fish/vendor_completions.d"
mkdir -p "$man" "$bash" "$zsh" "$fish"
for t in $tools; do
    exe="$root/bin/$t"
    (cd "$man" && "$exe" --generate man-pages >/dev/null)
    "$exe" --generate bash >"$bash/$t"
    "$exe" --generate zsh >"$zsh/_$t"
    "$exe" --generate fish >"$fish/$t.fish"
done
echo "installed into $root: bin/{$(echo $tools | tr ' ' ,)}, $(ls "$man" | wc -l) man pages, completions for bash, zsh and fish"

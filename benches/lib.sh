# Shared by the bench scripts (sourced, not run).

# peak_rss LABEL CMD...: the largest max RSS of 3 runs of CMD (/usr/bin/time -f %M, KiB),
# printed in MB on one line.
peak_rss() {
  local label=$1 f m=0 v; shift; f=$(mktemp)
  for _ in 1 2 3; do
    /usr/bin/time -f %M -o "$f" "$@" >/dev/null 2>&1 || true
    v=$(tail -n 1 "$f"); [ "${v:-0}" -gt "$m" ] && m=$v
  done
  rm -f "$f"
  awk -v l="$label" -v m="$m" 'BEGIN { printf "peak RSS  %-44s %7.1f MB\n", l ":", m / 1024 }'
}

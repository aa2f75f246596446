#!/usr/bin/env bash
# settings-watch benchmark: latency write → revert (median, p99 over 1,000 writes), bursts of
# 10,000 writes (none lost), idle CPU over 10 s. Release build; prints one line per figure.
# Usage: benches/settings-watch.sh   (knobs: LATENCY_WRITES, BURST_WRITES, IDLE_SECS)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "# $(date -u +%FT%TZ) $(uname -sr), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), /tmp on $(df -T /tmp | awk 'NR==2{print $2}')"
exec cargo bench -p settings-watch --bench settings-watch

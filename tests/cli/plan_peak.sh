#!/usr/bin/env bash
# --plan's peak_bytes (its dry run's Buffers, which speedup.sh sizes runs by) against a real
# run's: one epoch of TGN on the first 2,000 WIKI events, equal within 1% (the run holds a
# few small Buffers more: its metrics and evaluation).
#   plan_peak.sh DEPBLOOM_TRAIN RUN_DIR
set -euo pipefail
train=$1 dir=$2
rm -rf "$dir"
args=(--threads 1 --set train.epoch=1 --set data.max_events=2000 --set run.checkpoint=false
  --set run.progress=false)
host_peak() { grep -o '"peak_bytes":{[^}]*}' | head -n 1 | grep -o '"host":[0-9]*' | cut -d: -f2; }
"$train" "${args[@]}" --out "$dir" > /dev/null 2>&1
planned=$("$train" "${args[@]}" --plan 2> /dev/null | host_peak)
measured=$(host_peak < "$dir/metrics.jsonl")
echo "peak of the Buffers: plan $planned bytes, run $measured bytes"
awk -v p="$planned" -v r="$measured" 'BEGIN { d = (p - r) / r; exit !(p > 0 && d < 0.01 && d > -0.01) }'

#!/usr/bin/env bash
# Critical-path pipelining (pipeline.enabled, docs/strategies.md): TGN on the shipped WIKI
# stream and on the synthetic REDDIT shape (scale 0.1), one device and 2 ranks (strategy
# depbloom), one training epoch per run with the pipeline off and on, alternating (off, on,
# then on, off, ...) N times. Per cell: the epoch's training time, the step loop's wall time,
# the time hidden by overlap and the deferred share (metrics.jsonl's critical_path), each a
# median, and the median over the repetitions of (off time / on time) of the pair run
# back to back: >= 0.97 is "no slower". All into one JSON file.
#
#   benchmarks/pipeline.sh [--smoke] [--reps N] [--cells "wiki:1 wiki:2 reddit:1 reddit:2"]
#                          [--out FILE] [--work DIR] [--build DIR]
#
#   --smoke   WIKI, one device, the first 20,000 events, 1 repetition (a minute or two)
#   --reps N  repetitions of each (off, on) pair (default 5)
#   --cells   dataset:ranks pairs (default all four)
#   --out     default benchmarks/results/pipeline.json
#   --work    run folders (DIR/<time>/), default runs/pipeline
#   --build   the build folder with depbloom-train (MPI) and depbloom-data (default build)
# Timings need a quiet machine: other work on the cores moves them more than the pipeline.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=pipeline
source "$root/benchmarks/bench_common.sh"

cells="wiki:1 wiki:2 reddit:1 reddit:2" reps=5 max_events=0
out=$root/benchmarks/results/pipeline.json work=$root/runs/pipeline build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) cells=wiki:1 reps=1 max_events=20000 ;;
    --reps) reps=$2; shift ;;
    --cells) cells=$2; shift ;;
    --out) out=$(absolute "$2"); shift ;;
    --work) work=$(absolute "$2"); shift ;;
    --build) build=$2; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

use_build "$build"
start_runs "$(dirname "$out")"

status=0
# run DATASET RANKS REP PIPELINE: one epoch, appended to the manifest.
run() {
  local dataset=$1 p=$2 rep=$3 on=$4 data
  local dir=$runs/$dataset-p$p-r$rep-$on ranks=(--threads "$cores")
  data=$(dataset_data "$dataset") || { status=1; return; }
  # Two ranks share the cores (depbloom-train --ranks divides run.threads 0 among them).
  ((p > 1)) && ranks=(--ranks "$p" --set strategy.name=depbloom)
  log "$dataset, $p rank(s), repetition $rep, pipeline $on into $dir"
  run_and_record "$dir" "$dataset" "$p" "$rep" "$on" -- \
    --config configs/tgn-wiki.yaml --data "$data" --device cpu "${ranks[@]}" \
    --set "pipeline.enabled=$on" --set train.epoch=1 --set train.patience=0 \
    --set "data.max_events=$max_events" --set run.checkpoint=false --set run.progress=false
}

for cell in $cells; do
  for ((rep = 0; rep < reps; ++rep)); do
    if ((rep % 2 == 0)); then order="false true"; else order="true false"; fi
    for on in $order; do run "${cell%:*}" "${cell#*:}" "$rep" "$on"; done
  done
done

report pipeline "$out" "$manifest" "$reps" "$max_events" "$cores"
exit $status

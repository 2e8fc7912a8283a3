#!/usr/bin/env bash
# Strong scaling of the `strict` data-parallel strategy on CPU ranks: trains TGN on the
# shipped WIKI stream and on the synthetic REDDIT-shaped stream with 1, 2 and 4 ranks
# (depbloom-train --ranks P, the same global batch) and collects per (dataset, P) the epoch
# time, events/s and what the ranks exchanged into one JSON file.
#
#   benchmarks/strict_scaling.sh [--build DIR]
#   MAX_BATCHES=20 DATASETS=tgn-wiki OUT=/tmp/s.json benchmarks/strict_scaling.sh --build build-cpu
#
#   --build DIR  the build folder with depbloom-train (built with MPI) and depbloom-data
#                (default build)
# Environment (all optional):
#   EPOCHS       epochs per run (default: 1)
#   MAX_BATCHES  training batches per epoch, --set run.max_batches=N (default: 0, all)
#   RANKS        rank counts to run (default: "1 2 4")
#   DATASETS     config names to run (default: tgn-wiki tgn-synth-reddit)
#   OUT          the JSON file to write (default: benchmarks/results/strict_scaling.json)
#   RUNS         folder for the run folders (default: runs/strict_scaling-<time>)
#   EXTRA_SETS   more depbloom-train options, word-split, e.g. "--set data.max_events=20000"
#   OMP_NUM_THREADS  threads per rank; unset, depbloom-train gives each rank cores / P
# A relative --build, OUT or RUNS is taken from the working directory the script starts in;
# the runs start in the repository root, where the configs' data paths point. The
# synthetic data (data/synth/reddit-s0.1-f172) is generated with depbloom-data when it is missing.
# Per (dataset, P), from rank 0's metrics.jsonl, averaged over the epochs: training seconds
# per epoch (and with validation), global events/s, the events rank 0 trained on, sync
# points (blocking collectives) and calls and bytes per collective kind per epoch, the
# memory rows and mails exchanged per epoch, the loss and validation AP (they should agree
# across P up to f32 rounding and dropout masks, docs/dist.md), and the speed-up over P = 1.
# A run that fails is recorded with its exit code; the script then exits 1 after writing the
# file.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=strict_scaling
source "$root/benchmarks/bench_common.sh"

build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
EPOCHS=${EPOCHS:-1}
MAX_BATCHES=${MAX_BATCHES:-0}
RANKS=${RANKS:-1 2 4}
DATASETS=${DATASETS:-tgn-wiki tgn-synth-reddit}
OUT=$(absolute "${OUT:-$root/benchmarks/results/strict_scaling.json}")
RUNS=$(absolute "${RUNS:-$root/runs/strict_scaling-$(date +%Y%m%d-%H%M%S)}")
EXTRA_SETS=${EXTRA_SETS:-}

use_build "$build" mpi
cd "$root"
mkdir -p "$RUNS" "$(dirname "$OUT")"

status=0
runs=()
for dataset in $DATASETS; do
  config=configs/$dataset.yaml
  for p in $RANKS; do
    run=$RUNS/$dataset-p$p
    mkdir -p "$run"
    rc=0
    if [[ ! -f $config ]]; then
      log "no $config"
      rc=2
    elif [[ $dataset == *-synth-* ]] && ! need_synth "${dataset##*-synth-}"; then
      rc=3
    else
      log "$dataset on $p rank(s): $EPOCHS epoch(s), max_batches $MAX_BATCHES, into $run"
      # CPU ranks: strict runs over MPI on the CPU. No checkpoints: they are not measured.
      # shellcheck disable=SC2086  # EXTRA_SETS is a list of options
      "$train" --config "$config" --ranks "$p" --device cpu --set strategy.name=strict \
        --set "train.epoch=$EPOCHS" --set train.patience=0 --set "run.max_batches=$MAX_BATCHES" \
        --set run.checkpoint=false --set run.progress=false $EXTRA_SETS --out "$run" 2>&1 |
        tee "$run/train.log" >&2 || rc=${PIPESTATUS[0]}
    fi
    [[ $rc -eq 0 ]] || { log "$dataset on $p rank(s) failed with exit code $rc"; status=1; }
    runs+=("$dataset=$p=$run=$rc")
  done
done

report strict_scaling "$OUT" "$EPOCHS" "$MAX_BATCHES" "$EXTRA_SETS" "${runs[@]}"
exit $status

#!/usr/bin/env bash
# The `depbloom` strategy (window plans, docs/strategies.md) against `strict` on CPU ranks:
# TGN on the shipped WIKI stream and the synthetic REDDIT shape (scale 0.1), 3 epochs,
# train.batch_size = P x 600, P = 1, 2, 4, 8; depbloom with each partition.method (metis,
# fennel, hash). Per run: test AP (whole and per-batch mean, transductive and new node),
# collectives and bytes per epoch, the plan's cut fraction, imbalance and migrated nodes,
# and the epoch time; all into one JSON file, and a Markdown table on stdout.
#
#   benchmarks/partition.sh [--smoke | --quick] [--seeds N] [--out FILE] [--build DIR]
#                           [--datasets wiki,reddit] [--ranks 1,2,4,8] [--work DIR]
#
#   --smoke     WIKI, first 20,000 events, 1 epoch, P = 1, 2 (about a minute on 2 cores)
#   --quick     WIKI, 1 epoch, P = 1, 2, 4
#   --seeds N   run.seed 0 .. N-1 for every run (default 1)
#   --out FILE  default benchmarks/results/partition.json
#   --work DIR  run folders (DIR/<time>/), default runs/partition; the synthetic REDDIT
#               shape is made once into data/synth/reddit-s0.1-f172
#   --build DIR the build folder with depbloom-train (MPI) and depbloom-data (default build)
# P = 1 runs once per dataset and seed: with one rank every strategy is single-device
# training, so it is the baseline of both. A run with more ranks than cores is marked
# "oversubscribed": its AP and counts are exact, its times are no measure of speed (null).
# A failed run is recorded with its exit code; the script then exits 1 after writing.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=partition
source "$root/benchmarks/bench_common.sh"

datasets=wiki,reddit ranks=1,2,4,8 epochs=3 seeds=1 max_events=0
out=$root/benchmarks/results/partition.json work=$root/runs/partition build=build
methods="metis fennel hash"
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) datasets=wiki ranks=1,2 epochs=1 max_events=20000 ;;
    --quick) datasets=wiki ranks=1,2,4 epochs=1 ;;
    --seeds) seeds=$2; shift ;;
    --out) out=$(absolute "$2"); shift ;;
    --datasets) datasets=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    --work) work=$(absolute "$2"); shift ;;
    --build) build=$2; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

use_build "$build" mpi
start_runs "$(dirname "$out")"

status=0
# run DATASET P STRATEGY METHOD SEED DATA: one training run, appended to the manifest.
run() {
  local dataset=$1 p=$2 strategy=$3 method=$4 seed=$5 data=$6 threads launch=()
  local dir=$runs/$dataset-p$p-$strategy${method:+-$method}-s$seed
  threads=$(rank_threads "$p")
  [[ $p -gt 1 ]] && launch=(--ranks "$p")
  log "$dataset P=$p $strategy ${method:-} seed $seed ($threads threads/rank) into $dir"
  run_and_record "$dir" "$dataset" "$p" "$strategy" "${method:--}" "$seed" "$threads" -- \
    --config configs/tgn-wiki.yaml --data "$data" "${launch[@]}" --device cpu \
    --threads "$threads" --seed "$seed" --set "strategy.name=$strategy" \
    ${method:+--set "partition.method=$method"} --set partition.window_steps=8 \
    --set "train.batch_size=$((p * 600))" --set "train.epoch=$epochs" --set train.patience=0 \
    --set "data.max_events=$max_events" --set run.checkpoint=false --set run.progress=false
}

for dataset in ${datasets//,/ }; do
  data=$(dataset_data "$dataset") || { status=1; continue; }
  for ((seed = 0; seed < seeds; ++seed)); do
    for p in ${ranks//,/ }; do
      if [[ $p -eq 1 ]]; then run "$dataset" 1 strict "" "$seed" "$data"; continue; fi
      run "$dataset" "$p" strict "" "$seed" "$data"
      for m in $methods; do run "$dataset" "$p" depbloom "$m" "$seed" "$data"; done
    done
  done
done

# cores: nproc, as the runs saw them
report partition "$out" "$manifest" "$epochs" "$max_events" "$cores"
exit $status

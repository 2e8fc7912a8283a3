#!/usr/bin/env bash
# The large-batch learning-rate rules (train.lr_scaling, train.warmup_steps; docs/refine.md):
# TGN, JODIE and APAN on the shipped WIKI stream at global batch 2400 and 4800, each rule
# (none, sqrt, linear) without warm-up and sqrt and linear with one warm-up length, and batch
# 600 for reference, 3 epochs, paired seeds, one device. Per run: best validation
# per-batch-mean AP, test AP at that epoch, the final loss. Per (model, batch) the rule is
# chosen on mean validation AP (never test AP) and set against `none`. All into one JSON
# file, and Markdown tables on stdout. Seeds run outermost, so a cut-off run has every cell
# at the seeds it reached; --resume continues it.
#
#   benchmarks/lr_study.sh [--smoke] [--seeds N] [--epochs E] [--pairs "MODEL:DATA ..."]
#                          [--batches "B ..."] [--warmup W] [--out FILE] [--work DIR]
#                          [--resume DIR] [--build DIR]
#
#   --smoke       TGN WIKI, first 20,000 events, 1 epoch, 1 seed, batch 2400 (a minute)
#   --seeds N     run.seed 0 .. N-1 in every cell (default 3)
#   --epochs E    default 3
#   --pairs       default "tgn:wiki jodie:wiki apan:wiki"
#   --batches     the enlarged global batches (default "2400 4800"); 600 runs as reference
#   --warmup W    the warm-up length of the warmed cells, in optimiser steps (default 20)
#   --out FILE    default benchmarks/results/lr_study.json
#   --work DIR    run folders (DIR/<time>/), default runs/lr_study
#   --resume DIR  add to the run folder DIR: runs its manifest records as finished are kept
#   --build DIR   the build folder with depbloom-train (default build)
# A failed run is recorded with its exit code; the script exits 1.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=lr_study
source "$root/benchmarks/bench_common.sh"

pairs="tgn:wiki jodie:wiki apan:wiki" batches="2400 4800" epochs=3 seeds=3 warmup=20
max_events=0 resume="" out=$root/benchmarks/results/lr_study.json work=$root/runs/lr_study
build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) pairs=tgn:wiki batches=2400 epochs=1 seeds=1 max_events=20000 ;;
    --seeds) seeds=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    --pairs) pairs=$2; shift ;;
    --batches) batches=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --resume) resume=$(cd "$(absolute "$2")" && pwd) || exit 2; shift ;;
    --out) out=$(absolute "$2"); shift ;;
    --work) work=$(absolute "$2"); shift ;;
    --build) build=$2; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

use_build "$build"
start_runs "$(dirname "$out")"

status=0
# run MODEL DATASET DATA BATCH RULE WARMUP SEED: one training run, appended to the manifest.
run() {
  local model=$1 dataset=$2 data=$3 batch=$4 rule=$5 warm=$6 seed=$7
  local dir=$runs/$model-$dataset-b$batch-$rule-w$warm-s$seed
  if finished_run "$dir"; then log "$dir: finished before, kept"; return; fi
  rm -rf "$dir"  # a cut-off run's metrics.jsonl would be appended to
  log "$model $dataset batch $batch lr_scaling=$rule warm-up $warm, seed $seed into $dir"
  run_and_record "$dir" "$model" "$dataset" "$batch" "$rule" "$warm" "$epochs" "$seed" -- \
    --config "configs/$model-wiki.yaml" --data "$data" --device cpu --threads "$cores" \
    --seed "$seed" --set "train.batch_size=$batch" --set "train.lr_scaling=$rule" \
    --set "train.warmup_steps=$warm" --set "train.epoch=$epochs" --set train.patience=0 \
    --set "data.max_events=$max_events" --set run.checkpoint=false --set run.progress=false
}

for ((seed = 0; seed < seeds; ++seed)); do
  for pair in $pairs; do
    model=${pair%%:*} dataset=${pair#*:}
    data=$(dataset_data "$dataset") || { status=1; continue; }
    run "$model" "$dataset" "$data" 600 none 0 "$seed"
    for batch in $batches; do
      for rule in none sqrt linear; do run "$model" "$dataset" "$data" "$batch" "$rule" 0 "$seed"; done
      for rule in sqrt linear; do run "$model" "$dataset" "$data" "$batch" "$rule" "$warmup" "$seed"; done
    done
  done
done

report lr_study "$out" "$manifest" "$epochs" "$max_events" "$cores" "$warmup"
exit $status

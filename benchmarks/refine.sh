#!/usr/bin/env bash
# Intra-batch memory refinement (refine.micro_batches = m, docs/refine.md): TGN, JODIE
# and APAN on the shipped WIKI stream and TGN on the synthetic REDDIT shape (scale 0.1),
# batch 600 (m = 1) and batches 2400 and 4800 with m = 1, 4, 8, 3 epochs, paired seeds; and
# for TGN on WIKI batch 4800 with 8x the epochs (as many optimiser steps as batch 600), so
# that the AP lost to fewer steps and the AP lost to stale memory are told apart. Per run:
# test AP (per-batch mean, transductive and new node), validation AP per epoch, training
# events/s, the share of memory rows refined and the refine stage's seconds. Per (model,
# dataset, batch, epochs) m is chosen on mean validation AP (never test AP) and set against
# m = 1 and batch 600. All into one JSON file, and Markdown tables on stdout.
#
#   benchmarks/refine.sh [--smoke | --quick | --acceptance] [--no-equal-steps] [--seeds N]
#                        [--epochs E] [--out FILE] [--work DIR] [--aggregate last|mean]
#                        [--coherence W] [--coherence-sample S] [--start identity|updater]
#                        [--cells "B:M ..."]
#                        [--pairs "MODEL:DATA ..."] [--steps-m "M ..."]
#                        [--steps-pairs "MODEL:DATA ..."] [--eval-batch N]
#                        [--resume DIR] [--build DIR]
#
#   --smoke       TGN WIKI, first 20,000 events, 1 epoch, 1 seed, batch 2400, m = 1, 4
#                 (about a minute on 2 cores)
#   --quick       TGN WIKI, 3 epochs, 1 seed: batch 600 (m = 1), batch 4800 (m = 1, 4)
#   --acceptance  issue 17's acceptance: TGN WIKI, 3 epochs, 3 seeds: batch 600 (m = 1),
#                 batch 4800 (m = 1, 4, 8), and batch 4800 for 24 epochs (m = 1, 4, 8)
#   --no-equal-steps  leave out the 8x-epochs runs
#   --seeds N     run.seed 0 .. N-1 for every cell, the same seeds in every cell (default 3)
#   --epochs E    the cells' epochs (default 3; the equal-steps runs take 8 E)
#   --out FILE    default benchmarks/results/refine.json
#   --work DIR    run folders (DIR/<time>/), default runs/refine (REDDIT: data/synth/reddit-s0.1-f172)
#   --aggregate   refine.aggregate for the m > 1 runs (default last)
#   --coherence W refine.coherence_weight for the m > 1 runs (default 0: off)
#   --coherence-sample S  refine.coherence_sample (default 0.1)
#   --start S     refine.start for the m > 1 runs (default identity; updater: the correction
#                 starts from the memory updater's output)
#   --cells "B:M ..."  the (batch, m) cells instead of the mode's, e.g. "4800:1 4800:4"
#   --pairs "MODEL:DATA ..."  the (model, dataset) pairs instead of the mode's, e.g. "apan:wiki"
#   --steps-m "M ..."  the m values of the equal-steps runs (default "1 4 8")
#   --steps-pairs "MODEL:DATA ..."  the pairs given equal-steps runs (default tgn:wiki)
#   --eval-batch N  eval.batch_size (default the config's: 200, the TGN authors'; TGL
#                 evaluates at the training batch, which --eval-batch train selects)
#   --resume DIR  add to the run folder DIR (an earlier or interrupted run's): runs its
#                 manifest records as finished are not run again, and the JSON covers all
#                 of DIR's runs (options that change a run's settings must be the same)
#   --build DIR   the build folder with depbloom-train and depbloom-data (default build)
# A failed run is recorded with its exit code; the script exits 1.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=refine
source "$root/benchmarks/bench_common.sh"

pairs="tgn:wiki jodie:wiki apan:wiki tgn:reddit" cells="600:1 2400:1 2400:4 2400:8 4800:1 4800:4 4800:8"
steps_pairs="tgn:wiki" epochs=3 seeds=3 seeds_opt="" max_events=0 aggregate=last
coherence=0 coherence_sample=0.1 start=identity equal_steps=1 cells_opt="" pairs_opt="" steps_m="1 4 8"
eval_batch="" resume="" epochs_opt="" steps_pairs_opt=""
out=$root/benchmarks/results/refine.json work=$root/runs/refine build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) pairs=tgn:wiki cells="2400:1 2400:4" steps_pairs="" epochs=1 seeds=1 max_events=20000 ;;
    --quick) pairs=tgn:wiki cells="600:1 4800:1 4800:4" steps_pairs="" seeds=1 ;;
    --acceptance) pairs=tgn:wiki cells="600:1 4800:1 4800:4 4800:8" steps_pairs=tgn:wiki seeds=3 ;;
    --no-equal-steps) equal_steps=0 ;;
    --coherence) coherence=$2; shift ;;
    --coherence-sample) coherence_sample=$2; shift ;;
    --start) start=$2; shift ;;
    --seeds) seeds_opt=$2; shift ;;
    --epochs) epochs_opt=$2; shift ;;
    --cells) cells_opt=$2; shift ;;
    --pairs) pairs_opt=$2; shift ;;
    --steps-m) steps_m=$2; shift ;;
    --steps-pairs) steps_pairs_opt=$2; shift ;;
    --eval-batch) eval_batch=$2; shift ;;
    --resume) resume=$(cd "$(absolute "$2")" && pwd) || exit 2; shift ;;
    --out) out=$(absolute "$2"); shift ;;
    --work) work=$(absolute "$2"); shift ;;
    --aggregate) aggregate=$2; shift ;;
    --build) build=$2; shift ;;
    -h|--help) sed -n '2,45p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
# The options win over the modes, whatever the order.
seeds=${seeds_opt:-$seeds} epochs=${epochs_opt:-$epochs} cells=${cells_opt:-$cells}
pairs=${pairs_opt:-$pairs} steps_pairs=${steps_pairs_opt:-$steps_pairs}
((equal_steps)) || steps_pairs=""

use_build "$build"
start_runs "$(dirname "$out")"

status=0
# run MODEL DATASET DATA BATCH M EPOCHS SEED: one training run, appended to the manifest.
run() {
  local model=$1 dataset=$2 data=$3 batch=$4 m=$5 ep=$6 seed=$7 eval_set=() weight=0
  local dir=$runs/$model-$dataset-b$batch-m$m-e$ep-s$seed
  if finished_run "$dir"; then log "$dir: finished before, kept"; return; fi
  rm -rf "$dir"  # a cut-off run's metrics.jsonl would be appended to
  local eval_size=$eval_batch
  [[ $eval_batch != train ]] || eval_size=$batch
  [[ -z $eval_size ]] || eval_set=(--set "eval.batch_size=$eval_size")
  [[ $m -le 1 ]] || weight=$coherence
  log "$model $dataset batch $batch m=$m, $ep epoch(s), seed $seed into $dir"
  # The final test reloads the best epoch from memory (train/fit.cpp), so no checkpoints.
  run_and_record "$dir" "$model" "$dataset" "$batch" "$m" "$ep" "$seed" -- \
    --config "configs/$model-wiki.yaml" --data "$data" --device cpu --threads "$cores" \
    --seed "$seed" --set "train.batch_size=$batch" --set "refine.micro_batches=$m" \
    --set "refine.aggregate=$aggregate" --set "refine.coherence_weight=$weight" \
    --set "refine.coherence_sample=$coherence_sample" --set "refine.start=$start" \
    --set "train.epoch=$ep" --set train.patience=0 --set "data.max_events=$max_events" \
    --set run.checkpoint=false --set run.progress=false "${eval_set[@]}"
}

for pair in $pairs; do
  model=${pair%%:*} dataset=${pair#*:}
  data=$(dataset_data "$dataset") || { status=1; continue; }
  for ((seed = 0; seed < seeds; ++seed)); do
    for cell in $cells; do run "$model" "$dataset" "$data" "${cell%:*}" "${cell#*:}" "$epochs" "$seed"; done
    # Equal steps: batch 4800 for 8x the epochs of batch 600.
    [[ " $steps_pairs " == *" $pair "* ]] || continue
    for m in $steps_m; do run "$model" "$dataset" "$data" 4800 "$m" $((8 * epochs)) "$seed"; done
  done
done

report refine "$out" "$manifest" "$epochs" "$max_events" "$cores" "$aggregate" \
  "$coherence" "$coherence_sample" "${eval_batch:-config}" "$start"
exit $status

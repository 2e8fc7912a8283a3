#!/usr/bin/env bash
# Trains each shipped model for a fixed number of epochs and collects speed and test
# quality into one JSON file.
#
#   benchmarks/train_models.sh [--build DIR]       # from anywhere; paths below are
#   EPOCHS=1 DEVICE=cpu OUT=/tmp/t.json benchmarks/train_models.sh --build build-cpu
#
#   --build DIR the build folder with depbloom-train and depbloom-data (default build)
# Environment (all optional):
#   EPOCHS      epochs per model (default: 3)
#   DEVICE      auto, cpu or cuda:N, passed as --device (default: auto)
#   OUT         the JSON file to write (default: benchmarks/results/train_models.json)
#   RUNS        folder for the run folders, one per model (default: runs/train_models-<time>)
#   MODELS      config names to run (default: tgn-wiki jodie-wiki apan-wiki tgn-synth-reddit)
#   EXTRA_SETS  more depbloom-train options, word-split, e.g.
#               EXTRA_SETS="--set data.max_events=20000" for a quick end-to-end check
# A relative --build, OUT or RUNS is taken from the working directory the script starts in;
# the runs themselves start in the repository root, where the configs' data paths point.
# The *-synth-reddit config's data (data/synth/reddit-s0.1-f172) is generated with depbloom-data when
# it is missing. Per model the JSON holds seconds per epoch (training, and with
# validation), events/s, the test AP and AUC over the whole split and as the per-batch mean,
# transductive and new-node, read from the run's metrics.jsonl. A model whose run fails is
# recorded with its exit code; the script then exits 1 after writing the file.
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=train_models
source "$root/benchmarks/bench_common.sh"

build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift ;;
    -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
EPOCHS=${EPOCHS:-3}
DEVICE=${DEVICE:-auto}
OUT=$(absolute "${OUT:-$root/benchmarks/results/train_models.json}")
RUNS=$(absolute "${RUNS:-$root/runs/train_models-$(date +%Y%m%d-%H%M%S)}")
MODELS=${MODELS:-tgn-wiki jodie-wiki apan-wiki tgn-synth-reddit}
EXTRA_SETS=${EXTRA_SETS:-}

use_build "$build"
cd "$root"
mkdir -p "$RUNS" "$(dirname "$OUT")"

status=0
runs=()
for model in $MODELS; do
  config=configs/$model.yaml
  run=$RUNS/$model
  mkdir -p "$run"
  rc=0
  if [[ ! -f $config ]]; then
    log "no $config"
    rc=2
  elif [[ $model == *-synth-* ]] && ! need_synth "${model##*-synth-}"; then
    rc=3
  else
    log "$model: $EPOCHS epoch(s) on --device $DEVICE into $run"
    # shellcheck disable=SC2086  # EXTRA_SETS is a list of options
    "$train" --config "$config" --device "$DEVICE" --set "train.epoch=$EPOCHS" \
      --set train.patience=0 $EXTRA_SETS --out "$run" 2>&1 | tee "$run/train.log" >&2 ||
      rc=${PIPESTATUS[0]}
  fi
  [[ $rc -eq 0 ]] || { log "$model failed with exit code $rc"; status=1; }
  runs+=("$model=$run=$rc")
done

report train_models "$OUT" "$EPOCHS" "$DEVICE" "$EXTRA_SETS" "${runs[@]}"
exit $status

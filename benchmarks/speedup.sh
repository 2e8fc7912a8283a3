#!/usr/bin/env bash
# The speed-up suite (docs/benchmarks.md): epoch time and test AP of `strict` against the
# DepBloom strategy and each technique on CPU ranks, as ranks are added. Configurations:
# strict; strict + refinement; strict + pipeline; depbloom (metis); depbloom + refinement +
# pipeline. train.batch_size = P x 600, partition.window_steps = 8, refine.micro_batches = 4.
# A configuration the binary cannot run yet (pipeline.enabled before issue 18, or any whose
# --plan ends in a config error) is listed as not available, not run. Per run: epoch time, events/s, test AP
# (per-batch mean, transductive and new node), collectives and bytes per epoch, the plan's
# statistics, achieved GFLOP/s (the plan's exact GEMM FLOPs) and its share of this machine's
# SGEMM peak, and, where `--plan --profile` exists, the cost model's epoch time (labelled
# modelled). Runs with more ranks than cores are oversubscribed: AP and counts exact, no
# speed reported. Writes OUT_DIR/speedup.json, .csv (one row per run) and .md; prints the
# table. Every row is then checked against its run's metrics.jsonl and the plan's forecast,
# and P = 1 strict against P = 1 depbloom (the same AP); a mismatch exits 1.
#
#   benchmarks/speedup.sh [--smoke | --quick] [--build DIR] [--out-dir DIR] [--work DIR]
#                         [--models tgn,jodie,apan] [--datasets wiki,reddit,wikitalk]
#                         [--ranks 1,2,4,8] [--epochs N] [--seeds N] [--scale S]
#                         [--refine-m M] [--profile NAME] [--max-gib G] [--model-only]
#
#   (full)       TGN, JODIE, APAN; WIKI, REDDIT and WIKI-TALK shapes at scale 1; P = 1, 2,
#                4, 8; 3 epochs; 3 seeds (days on 2 cores)
#   --quick      TGN; WIKI and REDDIT at scale 0.1; P = 1, 2, 4; 1 epoch; 1 seed
#   --smoke      TGN; the first 6,000 WIKI events; P = 1, 2; 1 epoch; 1 seed (CI)
#   --build DIR  holds depbloom-train, depbloom-data, benchmarks/bench_gemm (default build)
#   --out-dir    default benchmarks/results;  --work: run folders, default runs/speedup
#   --scale S    the synthetic shapes' depbloom-data synth --scale
#   --profile    the cost model's device profile (default h200-nvlink, configs/devices/)
#   --max-gib G  refuse runs whose estimated memory exceeds G GiB (default 20)
#   --model-only the plans and the cost model's columns, no training (seconds, not hours)
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=speedup
source "$root/benchmarks/bench_common.sh"

mode=full models=tgn,jodie,apan datasets=wiki,reddit,wikitalk ranks=1,2,4,8 epochs=3 seeds=3
scale=1 max_events=0 refine_m=4 profile=h200-nvlink max_gib=20 model_only=no
build=build out_dir=$root/benchmarks/results work=$root/runs/speedup
overrides=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) mode=smoke models=tgn datasets=wiki ranks=1,2 epochs=1 seeds=1 max_events=6000 ;;
    --quick) mode=quick models=tgn datasets=wiki,reddit ranks=1,2,4 epochs=1 seeds=1 scale=0.1 ;;
    --model-only) model_only=yes ;;
    --build) build=$2; shift ;;
    --out-dir) out_dir=$(absolute "$2"); shift ;;
    --work) work=$(absolute "$2"); shift ;;
    --models | --datasets | --ranks | --epochs | --seeds | --scale | --refine-m | --profile | --max-gib)
      overrides+=("$1" "$2"); shift ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
# Explicit options win over --smoke/--quick, whatever the order.
for ((i = 0; i < ${#overrides[@]}; i += 2)); do
  v=${overrides[i + 1]}
  case ${overrides[i]} in
    --models) models=$v ;; --datasets) datasets=$v ;; --ranks) ranks=$v ;; --epochs) epochs=$v ;;
    --seeds) seeds=$v ;; --scale) scale=$v ;; --refine-m) refine_m=$v ;; --profile) profile=$v ;;
    --max-gib) max_gib=$v ;;
  esac
done

use_build "$build" mpi
start_runs "$out_dir"

# What this binary can do: the pipeline key (issue 18) and the cost model's --profile.
probe=(--config configs/tgn-wiki.yaml --plan --ranks 2 --set data.max_events=2000)
pipeline=no modelled=no
"$train" "${probe[@]}" --set pipeline.enabled=true >/dev/null 2>&1 && pipeline=yes
"$train" "${probe[@]}" --profile "$profile" >/dev/null 2>&1 && modelled=yes
log "pipeline: $pipeline; cost model --profile $profile: $modelled; refine.micro_batches = $refine_m"
[[ $pipeline == yes ]] ||
  log "strict+pipeline, depbloom+refine+pipeline: not available (no pipeline.enabled key); modelled only"

# configuration name -> its --set options
declare -A config_sets=(
  [strict]="strategy.name=strict"
  [strict+refine]="strategy.name=strict refine.micro_batches=$refine_m"
  [strict+pipeline]="strategy.name=strict pipeline.enabled=true"
  [depbloom]="strategy.name=depbloom partition.method=metis"
  [depbloom+refine+pipeline]="strategy.name=depbloom partition.method=metis refine.micro_batches=$refine_m pipeline.enabled=true"
)
configs="strict strict+refine strict+pipeline depbloom depbloom+refine+pipeline"

status=0
# run DATASET DATA MODEL P CONFIG SEED: the plan (and the model's), then one training run.
run() {
  local dataset=$1 data=$2 model=$3 p=$4 config=$5 seed=$6 rc=0
  local dir=$runs/$dataset-$model-p$p-$config-s$seed threads
  threads=$(rank_threads "$p")
  local sets=(--set partition.window_steps=8 --set "train.batch_size=$((p * 600))"
    --set "train.epoch=$epochs" --set train.patience=0 --set "data.max_events=$max_events"
    --set run.checkpoint=false --set run.progress=false)
  local unavailable=""
  for s in ${config_sets[$config]}; do
    # Without the pipeline key the configuration is not run, but the cost model still
    # gives its pipelined epoch from the plan without the key.
    if [[ $s == pipeline.enabled=true && $pipeline == no ]]; then
      unavailable="not available: no pipeline.enabled key in this build (issue 18)"
      continue
    fi
    sets+=(--set "$s")
  done
  local base=(--config "configs/$model-wiki.yaml" --data "$data" "${sets[@]}")
  mkdir -p "$dir"
  if ! "$train" "${base[@]}" --plan --ranks "$p" >"$dir/plan.json" 2>"$dir/plan.log"; then
    record "$dataset" "$model" "$p" "$config" "$seed" "$threads" "$dir" \
      "not available: $(grep -m1 -i error "$dir/plan.log" | sed 's/.*\] //' | tr '\t' ' ')"
    return
  fi
  [[ $modelled == no ]] ||
    "$train" "${base[@]}" --plan --ranks "$p" --profile "$profile" >"$dir/model.json" 2>>"$dir/plan.log" || true
  [[ $model_only == no ]] || unavailable=${unavailable:-"not run (--model-only)"}
  if [[ -n $unavailable ]]; then
    record "$dataset" "$model" "$p" "$config" "$seed" "$threads" "$dir" "$unavailable"
    return
  fi
  local gib
  gib=$(report speedup estimate --data "$data" --config "configs/$model-wiki.yaml" --ranks "$p" \
    --batch $((p * 600)) --max-events "$max_events")
  if python3 -c "import sys; sys.exit(0 if float('$gib') > float('$max_gib') else 1)"; then
    log "$dataset $model P=$p $config: estimated $gib GiB > $max_gib GiB, refused"
    record "$dataset" "$model" "$p" "$config" "$seed" "$threads" "$dir" "refused: estimated $gib GiB > $max_gib GiB"
    return
  fi
  local launch=()
  [[ $p -gt 1 ]] && launch=(--ranks "$p")
  log "$dataset $model P=$p $config seed $seed ($threads threads/rank) into $dir"
  train_into "$dir" "${base[@]}" "${launch[@]}" --device cpu --threads "$threads" \
    --seed "$seed" || rc=$?
  record "$dataset" "$model" "$p" "$config" "$seed" "$threads" "$dir" "exit $rc"
}

start=$SECONDS
head=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)  # the checkout the runs start from
for dataset in ${datasets//,/ }; do
  data=$(dataset_data "$dataset" "$scale") || { status=1; continue; }
  for model in ${models//,/ }; do
    for ((seed = 0; seed < seeds; ++seed)); do
      for p in ${ranks//,/ }; do
        for config in $configs; do run "$dataset" "$data" "$model" "$p" "$config" "$seed"; done
      done
    done
  done
done

# The machine's SGEMM peak: bench_gemm's best f32 rate with every core (else cpu-here.yaml's).
peak=$runs/sgemm_peak.json
if [[ $mode != smoke && $model_only == no && -x $build/benchmarks/bench_gemm ]]; then
  "$build/benchmarks/bench_gemm" --benchmark_filter='BM_Gemm<float>' --benchmark_format=json \
    --benchmark_min_time=0.3 >"$peak" 2>/dev/null || rm -f "$peak"
fi
report speedup summarise --manifest "$manifest" --out-dir "$out_dir" --mode "$mode" --cores "$cores" \
  --epochs "$epochs" --max-events "$max_events" --scale "$scale" --refine-m "$refine_m" \
  --profile "$profile" --modelled "$modelled" --pipeline "$pipeline" --gemm "$peak" \
  --seconds $((SECONDS - start)) --commit "$head" || status=1
exit $status

#!/usr/bin/env bash
# The speed-up suite (docs/benchmarks.md): time to single-device accuracy, and epoch time,
# traffic and test AP, of `strict` against DepBloom on CPU ranks as ranks are added.
# Configurations, all with the pipeline on (pipeline.enabled):
#   strict        strict at a global batch of P x 600 (the usual practice)
#   strict-600    strict at a global batch of 600 (one device's semantics on P devices; at
#                 P = 1 it is `strict`, not run twice)
#   depbloom      depbloom (metis, partition.window_steps 1) at P x 600
#   depbloom-op   DepBloom's operating point: configs/depbloom-MODEL-DATA.yaml (written for
#                 P = 8: its train.batch_size / 8 is each rank's k x 600, with refinement and
#                 its learning-rate rule), at P x k x 600
# strict and depbloom at P > 1 take the preset's train.lr_scaling and train.warmup_steps.
# Every configuration trains 2 x E_ref epochs (TGN 5, JODIE 10, APAN 10), no early stop. The
# target: P = 1 strict's mean best validation AP over its first E_ref epochs, minus 0.005;
# per configuration the epochs, steps and seconds to it (measured where P <= cores, modelled
# on cpu-here beyond; modelled on --profile for the GPU headline) (time_to_target.py). Runs
# with more ranks than cores are oversubscribed: AP and counts exact, no speed reported.
# Writes OUT_DIR/speedup.json, .csv (one row per run) and .md; prints the tables. Every row is
# then checked against its run's metrics.jsonl and the plan's forecast, and P = 1 strict
# against P = 1 depbloom (the same AP); a mismatch exits 1.
#
#   benchmarks/speedup.sh [--smoke | --quick] [--build DIR] [--out-dir DIR] [--work DIR]
#                         [--models tgn,jodie,apan] [--datasets wiki,reddit,wikitalk]
#                         [--ranks 1,2,4,8] [--epochs N] [--seeds N] [--scale S]
#                         [--profile NAME] [--max-gib G] [--model-only] [--resume DIR]
#
#   (full)       TGN, JODIE, APAN; WIKI and the REDDIT shape at scale 0.25; P = 1, 2, 4, 8;
#                2 x E_ref epochs; 3 seeds (many hours on 2 cores: use --resume)
#   --quick      TGN; WIKI; P = 1, 2, 4; 3 epochs (the target from its own P = 1 run); 1 seed
#   --smoke      TGN; the first 6,000 WIKI events; P = 1, 2; 1 epoch; 1 seed (CI)
#   --epochs N   every run trains N epochs (E_ref becomes min(E_ref, N))
#   --build DIR  holds depbloom-train, depbloom-data, benchmarks/bench_gemm (default build)
#   --out-dir    default benchmarks/results;  --work: run folders, default runs/speedup
#   --scale S    the synthetic shapes' depbloom-data synth --scale
#   --profile    the cost model's GPU profile (default h200-nvlink, configs/devices/)
#   --max-gib G  refuse runs whose estimated memory exceeds G GiB (default 20): P x (the
#                Buffers of --plan's dry run at one rank's share + 0.25 GiB; run_memory.py)
#   --model-only the plans and the cost model's columns, no training (seconds, not hours)
#   --grid       instead of the four configurations: the operating point's grid at the
#                largest of --ranks (default 8): depbloom-op with each rank's k x 600, k in
#                {2, 4, 8}, and refinement m in {k/2, k} (configs op-kK-mM), beside P = 1
#                strict for the target; the report chooses the (k, m) with the shortest
#                modelled GPU time to target among those whose mean best validation AP
#                reaches it (ties: the smaller k). Set the chosen pair in the preset.
#   --resume DIR continue the cut-off suite whose run folder (with manifest.tsv) is DIR: the
#                runs it finished are kept, the rest run; the tables cover them all
set -euo pipefail

here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=speedup
source "$root/benchmarks/bench_common.sh"

mode=full models=tgn,jodie,apan datasets=wiki,reddit ranks=1,2,4,8 epochs=2xref seeds=3
scale=0.25 max_events=0 profile=h200-nvlink max_gib=20 model_only=no resume="" grid=no
build=build out_dir=$root/benchmarks/results work=$root/runs/speedup
overrides=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) mode=smoke models=tgn datasets=wiki ranks=1,2 epochs=1 seeds=1 max_events=6000 ;;
    --quick) mode=quick models=tgn datasets=wiki ranks=1,2,4 epochs=3 seeds=1 ;;
    --model-only) model_only=yes ;;
    --grid) grid=yes ;;
    --build) build=$2; shift ;;
    --out-dir) out_dir=$(absolute "$2"); shift ;;
    --work) work=$(absolute "$2"); shift ;;
    --resume) resume=$(cd "$(absolute "$2")" && pwd) || exit 2; shift ;;
    --models | --datasets | --ranks | --epochs | --seeds | --scale | --profile | --max-gib)
      overrides+=("$1" "$2"); shift ;;
    -h | --help) sed -n '2,46p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
# Explicit options win over --smoke/--quick, whatever the order.
for ((i = 0; i < ${#overrides[@]}; i += 2)); do
  v=${overrides[i + 1]}
  case ${overrides[i]} in
    --models) models=$v ;; --datasets) datasets=$v ;; --ranks) ranks=$v ;; --epochs) epochs=$v ;;
    --seeds) seeds=$v ;; --scale) scale=$v ;; --profile) profile=$v ;; --max-gib) max_gib=$v ;;
  esac
done

grid_p=$(tr ',' '\n' <<<"$ranks" | sort -n | tail -1)
use_build "$build" mpi
start_runs "$out_dir"

modelled=no
"$train" --config configs/tgn-wiki.yaml --plan --ranks 2 --set data.max_events=2000 \
  --profile "$profile" >/dev/null 2>&1 && modelled=yes
log "cost model --profile $profile: $modelled; epochs: $epochs"

# E_ref per model (time_to_target.py's E_REF) and the epochs each run trains.
declare -A e_ref=([tgn]=5 [jodie]=10 [apan]=10)
run_epochs() { [[ $epochs == 2xref ]] && echo $((2 * ${e_ref[$1]:-5})) || echo "$epochs"; }

# The operating point's preset of MODEL on DATASET, and one of its train keys.
preset_file() {
  local data=$2
  [[ $data == wiki ]] || data=synth-$data
  echo "configs/depbloom-$1-$data.yaml"
}
preset_key() {
  local v
  v=$(grep -m1 -oP "^[\s-]*$2:\s*\K[^\s#]+" "$1") || v=$3
  tr -d "'\"" <<<"$v"
}

# write_plans DIR P ARGS...: the strategy's forecast of the run depbloom-train ARGS makes
# (plan.json) and, with the cost model on, its times on --profile and on cpu-here.
write_plans() {
  local dir=$1 p=$2
  shift 2
  "$train" "$@" --plan --ranks "$p" >"$dir/plan.json" 2>"$dir/plan.log" || return 1
  if [[ $modelled == yes ]]; then
    "$train" "$@" --plan --ranks "$p" --profile "$profile" >"$dir/model.json" 2>>"$dir/plan.log" || true
    "$train" "$@" --plan --ranks "$p" --profile cpu-here >"$dir/model-cpu.json" 2>>"$dir/plan.log" || true
  fi
}

status=0
# run DATASET DATA MODEL P CONFIG SEED: the plans (and the cost model's), then one training run.
run() {
  local dataset=$1 data=$2 model=$3 p=$4 config=$5 seed=$6 rc=0
  local dir=$runs/$dataset-$model-p$p-$config-s$seed threads preset batch=$((p * 600))
  threads=$(rank_threads "$p")
  local kept=no
  # Finished runs are matched by folder name, so a suite's folder can be moved (or committed
  # and resumed on another machine).
  awk -F'\t' -v d="${dir##*/}" '{ n = split($(NF - 1), a, "/") }
    a[n] == d && $NF == "exit 0" { f = 1 } END { exit !f }' "$manifest" && kept=yes
  preset=$(preset_file "$model" "$dataset")
  local config_file=configs/$model-wiki.yaml
  local sets=(--set pipeline.enabled=true --set partition.window_steps=1
    --set "train.epoch=$(run_epochs "$model")" --set train.patience=0
    --set "data.max_events=$max_events" --set run.checkpoint=false --set run.progress=false)
  if [[ ! -e $preset ]]; then
    record "$dataset" "$model" "$p" "$config" "$seed" "$threads" "$batch" "${dir##*/}" "not available: no $preset"
    return
  fi
  local rule=(--set "train.lr_scaling=$(preset_key "$preset" lr_scaling none)"
    --set "train.warmup_steps=$(preset_key "$preset" warmup_steps 0)")
  ((p > 1)) || rule=()
  case $config in
    strict) sets+=(--set strategy.name=strict "${rule[@]}") ;;
    strict-600) batch=600; sets+=(--set strategy.name=strict) ;;
    depbloom) sets+=(--set strategy.name=depbloom --set partition.method=metis "${rule[@]}") ;;
    depbloom-op)
      config_file=$preset
      batch=$((p * $(preset_key "$preset" batch_size 4800) / 8)) ;;
    op-k*-m*)  # a grid cell: the preset at k x 600 per rank and refinement m
      local k=${config#op-k} m=${config##*-m}
      k=${k%%-*}
      config_file=$preset batch=$((p * k * 600))
      sets+=(--set "refine.micro_batches=$m") ;;
  esac
  sets+=(--set "train.batch_size=$batch")
  # The seed in the plans too: it seeds the partitioner, so a seed's windows are its own.
  local base=(--config "$config_file" --data "$data" "${sets[@]}" --seed "$seed")
  if [[ $kept == yes ]]; then
    # Its plans again (seconds, not hours): a fix to the forecast reaches finished runs too.
    write_plans "$dir" "$p" "${base[@]}" || true
    log "$dir: finished before, kept (plans redone)"
    return
  fi
  rm -rf "$dir"  # a cut-off run's metrics.jsonl would be appended to
  mkdir -p "$dir"
  if ! write_plans "$dir" "$p" "${base[@]}"; then
    record "$dataset" "$model" "$p" "$config" "$seed" "$threads" "$batch" "${dir##*/}" \
      "not available: $(cat "$dir/plan.log" "$dir/plan.json" | grep -m1 -i error | sed 's/.*\] //' | tr '\t' ' ')"
    return
  fi
  if [[ $model_only == yes ]]; then
    record "$dataset" "$model" "$p" "$config" "$seed" "$threads" "$batch" "${dir##*/}" "not run (--model-only)"
    return
  fi
  # Memory: the plan of one rank's share of the batch, whose dry run holds what a rank will.
  local gib
  if ! "$train" "${base[@]}" --set "train.batch_size=$(((batch + p - 1) / p))" --plan \
    >"$dir/memory-plan.json" 2>>"$dir/plan.log"; then
    record "$dataset" "$model" "$p" "$config" "$seed" "$threads" "$batch" "${dir##*/}" \
      "not available: the memory plan failed ($dir/plan.log)"
    return
  fi
  gib=$(report speedup estimate --plan "$dir/memory-plan.json" --ranks "$p")
  if python3 -c "import sys; sys.exit(0 if float('$gib') > float('$max_gib') else 1)"; then
    log "$dataset $model P=$p $config: estimated $gib GiB > $max_gib GiB, refused"
    record "$dataset" "$model" "$p" "$config" "$seed" "$threads" "$batch" "${dir##*/}" "refused: estimated $gib GiB > $max_gib GiB"
    return
  fi
  local launch=()
  [[ $p -gt 1 ]] && launch=(--ranks "$p")
  log "$dataset $model P=$p $config (batch $batch) seed $seed ($threads threads/rank) into $dir"
  train_into "$dir" "${base[@]}" "${launch[@]}" --device cpu --threads "$threads" || rc=$?
  record "$dataset" "$model" "$p" "$config" "$seed" "$threads" "$batch" "${dir##*/}" "exit $rc"
}

start=$SECONDS
head=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)  # the checkout the runs start from
for dataset in ${datasets//,/ }; do
  data=$(dataset_data "$dataset" "$scale") || { status=1; continue; }
  for model in ${models//,/ }; do
    for ((seed = 0; seed < seeds; ++seed)); do
      if [[ $grid == yes ]]; then
        run "$dataset" "$data" "$model" 1 strict "$seed"
        for k in 2 4 8; do
          for m in $((k / 2)) "$k"; do run "$dataset" "$data" "$model" "$grid_p" "op-k$k-m$m" "$seed"; done
        done
        continue
      fi
      for p in ${ranks//,/ }; do
        for config in strict strict-600 depbloom depbloom-op; do
          [[ $p -gt 1 || $config != strict-600 ]] || continue  # at P = 1 it is strict
          run "$dataset" "$data" "$model" "$p" "$config" "$seed"
        done
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
  --epochs "$epochs" --max-events "$max_events" --scale "$scale" \
  --profile "$profile" --modelled "$modelled" --gemm "$peak" \
  --seconds $((SECONDS - start)) --commit "$head" || status=1
exit $status

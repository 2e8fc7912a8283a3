#!/usr/bin/env bash
# The step's fixed cost on this CPU before and after a change (fewer op calls, fused
# non-GEMM work): one training epoch of each model on WIKI with each of two builds, in
# alternating pairs on one machine, then the report (fixed_cost_report.py): median training
# seconds per epoch, op calls per step, and the whole step's share of this machine's SGEMM
# peak by the exact GEMM FLOP count of --plan.
#   benchmarks/fixed_cost.sh --before DIR --after DIR [--models tgn,jodie,apan] [--pairs 3]
#                            [--threads N] [--wait-policy P] [--out-dir DIR] [--work DIR]
#   --before, --after  build folders holding depbloom-train (the after build's
#                      benchmarks/bench_gemm measures the peak)
#   --pairs N          alternating before/after pairs per model (default 3; medians over them)
#   --threads N        CPU threads per run (default 0: every core)
#   --wait-policy P    OMP_WAIT_POLICY of every run: default (unset: libgomp spins a while,
#                      then sleeps; what a user gets), active or passive. Passive makes each of
#                      a step's parallel regions wake its threads: about 10% slower here
#   --out-dir DIR      fixed_cost.json and fixed_cost.md (default results/fixed-cost)
#   --work DIR         the runs' folders (default runs/fixed-cost)
# Timings compare only within one run of this script; exit 2 on bad arguments.
set -euo pipefail
here=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=fixed-cost
# shellcheck source=benchmarks/bench_common.sh
source "$root/benchmarks/bench_common.sh"

before="" after="" models=tgn,jodie,apan pairs=3 threads=0 wait_policy=default
out_dir=results/fixed-cost work=runs/fixed-cost
while [[ $# -gt 0 ]]; do
  case $1 in
    --before) before=$2; shift 2 ;;
    --after) after=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --wait-policy) wait_policy=$2; shift 2 ;;
    --out-dir) out_dir=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ -n $before && -n $after ]] || { echo "--before DIR and --after DIR are both needed" >&2; exit 2; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "--pairs must be a positive integer, got $pairs" >&2; exit 2; }
[[ $wait_policy =~ ^(default|active|passive)$ ]] ||
  { echo "--wait-policy must be default, active or passive, got $wait_policy" >&2; exit 2; }
use_build "$before"
before_train=$train
use_build "$after"
after_train=$train
out_dir=$(absolute "$out_dir")
work=$(absolute "$work")/$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out_dir" "$work"
cd "$root"
if [[ $wait_policy == default ]]; then unset OMP_WAIT_POLICY; else export OMP_WAIT_POLICY=$wait_policy; fi

# run SIDE BIN MODEL PAIR: one training epoch into $work/MODEL-SIDE-PAIR.
run() {
  local dir=$work/$3-$1-$4
  log "$3 $1 pair $4"
  "$2" --config "configs/$3-wiki.yaml" --set train.epoch=1 --set run.progress=false \
    --device cpu --threads "$threads" --seed 0 --out "$dir" >"$dir.log" 2>&1 ||
    { log "$dir failed: see $dir.log"; exit 1; }
}

IFS=, read -ra model_list <<<"$models"
for m in "${model_list[@]}"; do
  [[ -f configs/$m-wiki.yaml ]] || { echo "no configs/$m-wiki.yaml" >&2; exit 2; }
  "$after_train" --config "configs/$m-wiki.yaml" --plan --device cpu 2>/dev/null |
    grep '^{"plan"' >"$work/$m-plan.json"
  for ((i = 0; i < pairs; i++)); do
    # Alternate which build goes first, so a drift in the machine's speed falls on both.
    if ((i % 2 == 0)); then run before "$before_train" "$m" "$i"; run after "$after_train" "$m" "$i"
    else run after "$after_train" "$m" "$i"; run before "$before_train" "$m" "$i"; fi
  done
done

peak=$work/sgemm_peak.json
if [[ -x $after/benchmarks/bench_gemm ]]; then
  "$after/benchmarks/bench_gemm" --benchmark_filter='BM_Gemm<float>' --benchmark_format=json \
    --benchmark_min_time=0.3 >"$peak" 2>/dev/null || rm -f "$peak"
fi
report fixed_cost --work "$work" --models "$models" --pairs "$pairs" --gemm "$peak" \
  --before "$(absolute "$before")" --after "$(absolute "$after")" --out-dir "$out_dir" \
  --wait-policy "$wait_policy"

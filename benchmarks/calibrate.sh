#!/usr/bin/env bash
# Calibrates the cost model's cpu-here profile from micro-benchmarks and warm training steps
# (the step curves), then (with --check) checks it against training runs the calibration did
# not use, at other batch sizes, with the roofline alone (the profile less its curves) beside.
#
#   benchmarks/calibrate.sh            # micro-benchmarks -> configs/devices/cpu-here.yaml
#   benchmarks/calibrate.sh --check    # then TGN WIKI, 1 device and 2 ranks x batch 600, 2400,
#                                      # 4800: modelled vs measured
#   benchmarks/calibrate.sh --check-only
#   --build DIR  the build folder with depbloom-train and benchmarks/bench_{gemm,memory,
#                sampler,comm} (default build; relative to the starting folder)
# Environment (all optional):
#   THREADS  CPU threads of one device (one rank) while calibrating and checking (default: 1,
#            so that two ranks fit this machine's cores side by side)
#   PROFILE  the file to write (default: configs/devices/cpu-here.yaml)
#   MAX_EVENTS  the WIKI prefix the check trains on (default: 60000)
#   RUNS     folder for the check's run folders (default: runs/calibrate-<time>)
#   CHECK_BATCHES  the batch sizes the check trains at (default: "600 2400 4800")
#   CURVE_BATCHES  the batch sizes of the measured step curves (default: "200 1000 6000",
#                  none of them a rank's batch in the check: 300 to 4800)
#   CURVE_MODELS   the models with a step curve (default: "tgn jodie apan")
# What each profile key is measured by:
#   gemm_gflop_s        bench_gemm, f32, harmonic mean over TGN's forward and weight-gradient shapes
#   memory_gb_s         bench_memory BM_Copy (64 MiB, bytes read + written)
#   op_launch_us        bench_memory BM_SmallOp (one op call on 16 floats)
#   host_plan_per_s     bench_sampler BM_PlanPass (the sample stage over WIKI, roots + slots per s)
#   all_reduce, all_gather  bench_comm under `mpirun -np 2`: latency = the 8-byte call,
#                       bandwidth = the 1 MiB call's bytes x (2(P-1)/P or (P-1)/P) / (t - latency)
#   step_curves         per model and CURVE_BATCHES: two epochs over the WIKI prefix, the
#                       second's median step wall time (the device lane; roofline without)
# The check prints, per run, the measured and modelled epoch training seconds and each stage,
# and the relative error; it passes when every epoch is within 20%.
set -euo pipefail
here=$PWD
root=$(cd "$(dirname "$0")/.." && pwd)
tag=calibrate
source "$root/benchmarks/bench_common.sh"
mode=calibrate build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --check | --check-only) mode=$1 ;;
    --build) build=$2; shift ;;
    -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--check | --check-only] [--build DIR]" >&2; exit 2 ;;
  esac
  shift
done
THREADS=${THREADS:-1}
PROFILE=$(absolute "${PROFILE:-$root/configs/devices/cpu-here.yaml}")
MAX_EVENTS=${MAX_EVENTS:-60000}
CHECK_BATCHES=${CHECK_BATCHES:-600 2400 4800}
CURVE_BATCHES=${CURVE_BATCHES:-200 1000 6000}
CURVE_MODELS=${CURVE_MODELS:-tgn jodie apan}
RUNS=$(absolute "${RUNS:-runs/calibrate-$(date +%Y%m%d-%H%M%S)}")
use_build "$build" mpi
bench=$build/benchmarks
export OMP_NUM_THREADS=$THREADS OMP_WAIT_POLICY=passive
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

calibrate() {
  for b in bench_gemm bench_memory bench_sampler bench_comm; do
    [[ -x $bench/$b ]] || { log "no $bench/$b: build the benchmarks first"; exit 2; }
  done
  log "GEMM at TGN's shapes ($THREADS threads)"
  "$bench/bench_gemm" --benchmark_filter='BM_Gemm<float>|BM_GemmWeightGrad<float>' \
    --benchmark_min_time=0.5 --benchmark_format=json > "$tmp/gemm.json" 2> /dev/null
  log "memory bandwidth and op calls"
  "$bench/bench_memory" --benchmark_min_time=0.5 --benchmark_format=json > "$tmp/memory.json"
  log "host planning"
  # (its log lines go to stdout too: keep the JSON only)
  "$bench/bench_sampler" --benchmark_filter='BM_PlanPass/threads:1/' --benchmark_format=json \
    | grep -v '^\[20' > "$tmp/plan.json"
  log "MPI shared-memory link (2 ranks)"
  mpirun --oversubscribe -np 2 "$bench/bench_comm" > "$tmp/comm.jsonl"
  local model batch
  for model in $CURVE_MODELS; do
    for batch in $CURVE_BATCHES; do
      log "warm training steps: $model, batch $batch"
      "$train" --config "configs/$model-wiki.yaml" --threads "$THREADS" --set train.epoch=2 \
        --set data.max_events="$MAX_EVENTS" --set train.batch_size="$batch" \
        --set run.progress=false --set run.checkpoint=false \
        --out "$tmp/curve/$model-b$batch" > "$tmp/curve-$model-b$batch.log" 2>&1
    done
  done
  local commit
  commit=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
  report calibrate profile "$tmp" "$PROFILE" "$THREADS" "$commit" "$(hostname)" "$MAX_EVENTS"
  log "wrote $PROFILE"
}

# One held-out run: trains two epochs (the second is warm: the first faults its buffers in),
# then the plan of the same config on the profile.
check_run() {
  local name=$1 ranks=$2
  shift 2
  local sets=(--config configs/tgn-wiki.yaml --threads "$THREADS" --set train.epoch=2
    --set data.max_events="$MAX_EVENTS" --set run.progress=false "$@")
  log "training $name (ranks $ranks)"
  "$train" "${sets[@]}" --ranks "$ranks" --out "$RUNS/$name" > "$RUNS/$name.log" 2>&1
  "$train" "${sets[@]}" --ranks "$ranks" --plan --profile "$PROFILE" 2> "$RUNS/$name.plan.log" \
    | grep '^{"plan"' > "$RUNS/$name.plan.json"
  "$train" "${sets[@]}" --ranks "$ranks" --plan --profile "$tmp/roofline.yaml" \
    2>> "$RUNS/$name.plan.log" | grep '^{"plan"' > "$RUNS/$name.roofline.json"
}

check() {
  mkdir -p "$RUNS"
  report calibrate roofline "$PROFILE" "$tmp/roofline.yaml"
  local load_before
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  local batch batches
  read -ra batches <<< "$CHECK_BATCHES"
  for batch in "${batches[@]}"; do
    check_run "single-b$batch" 1 --set train.batch_size="$batch"
    check_run "strict2-b$batch" 2 --set train.batch_size="$batch"
  done
  report calibrate check "$RUNS" "$load_before" "$(getconf _NPROCESSORS_ONLN)" "${batches[@]}"
}

[[ $mode != --check-only ]] && calibrate
[[ $mode != calibrate ]] && check
exit 0

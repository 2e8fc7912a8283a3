#!/usr/bin/env bash
# Issue 32's device measurement: one process (benchmarks/gpu_bench.py) runs, in a fixed
# order, the micro-benchmarks (an op call = one kernel launch, 4 KiB and 16 MiB uploads from
# pinned memory, the GPU's copy, cuBLAS at TGN's shapes with TF32 off and on, the host's plan
# rate on one core and on all), then trains TGN, JODIE and APAN on WIKI and TGN on the REDDIT
# shape (scale 1, made on the device) at batches 600 to 9600 with the pipeline on, and at 600
# and 4800 also with the pipeline off, refinement at m = batch / 600 and TF32 on. Each
# training configuration: two short epochs, the second's median step time, host seconds
# per stage, op calls, uploads and host waits per step, peak device memory.
#
#   tools/gpu-bench.sh                   # on a GPU machine: within BUDGET_S (default 480 s)
#   tools/gpu-bench.sh --device cpu      # the same loop at small sizes (CI; within a minute)
#   --build DIR   programs from this build folder (default: build-gpu for cuda, build for cpu)
#
# Output in $OUT (default ./gpu-bench-out): bench.json (every configuration's numbers,
# rewritten after each, so a cut-off run still returns what it measured), bench.log, the run
# folders (runs/), and the profile: for cuda configs/devices/<gpu>-measured.yaml under $OUT
# (gpu: h100 or h200; copy it into configs/devices/ to ship it), for cpu $OUT/cpu-measured.yaml
# (or PROFILE). `depbloom-train --plan --profile FILE` reads it. Then the cost model against
# the held-out batches (benchmarks/gpu_bench_check.py: the curve fitted on 600, 2400 and 9600,
# checked at 1200 and 4800, the roofline alone beside) into $OUT/check/. Exit 0 when every
# configuration ran and the profile was written.
#
# Programs for cuda: from .gpu-kit/kit.tar.xz when present (tools/gpu-kit.sh packs
# depbloom-train, depbloom-data, bench_gemm, bench_memory and bench_sampler), else from the
# build folder. The REDDIT-shaped data (about 0.5 GB) goes to a temporary folder, not $OUT.
set -uo pipefail
here=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
root=$PWD
# shellcheck source=tools/gpu-kit-env.sh
source tools/gpu-kit-env.sh
device=cuda build=
while [[ $# -gt 0 ]]; do
  case $1 in
    --device) device=$2; shift ;;
    --build) [[ $2 = /* ]] && build=$2 || build=$here/$2; shift ;;
    -h | --help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $device == cuda || $device == cpu ]] || { echo "--device must be cuda or cpu" >&2; exit 2; }
OUT=${OUT:-$here/gpu-bench-out}
[[ $OUT = /* ]] || OUT=$here/$OUT
BUDGET_S=${BUDGET_S:-$([[ $device == cuda ]] && echo 480 || echo 50)}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/gpu-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
bin=$work/bin
mkdir -p "$bin"
programs=(depbloom-train depbloom-data bench_gemm bench_memory bench_sampler)

commit=$(git rev-parse --short HEAD 2>/dev/null)
if [[ $device == cuda && -z $build && -f .gpu-kit/kit.tar.xz ]]; then
  use_gpu_kit "$work" "$OUT/libraries.log" || exit 2
  for p in "${programs[@]}"; do
    [[ -x $work/bin/$p ]] || { echo "the kit has no $p: run tools/gpu-kit.sh again" >&2; exit 2; }
  done
  [[ -n $commit ]] || commit=$(sed -n 's/^from \([0-9a-f]*\).*/\1/p' "$work/README")
else
  build=${build:-$root/$([[ $device == cuda ]] && echo build-gpu || echo build)}
  for p in "${programs[@]}"; do
    for f in "$build/$p" "$build/benchmarks/$p"; do [[ -x $f ]] && ln -sf "$f" "$bin/$p"; done
    [[ -x $bin/$p ]] || { echo "no $p in $build: build it first" >&2; exit 2; }
  done
fi

gpu=cpu device_name="this machine's CPU ($(nproc) cores)"
if [[ $device == cuda ]]; then
  device_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
  case $device_name in
    *H100*) gpu=h100 ;;
    *H200*) gpu=h200 ;;
    *) gpu=$(echo "${device_name:-gpu}" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-') ;;
  esac
  profile=${PROFILE:-$OUT/configs/devices/$gpu-measured.yaml}
  { date -u +%FT%TZ; nvidia-smi; nproc; uname -a; } >"$OUT/machine.log" 2>&1
else
  profile=${PROFILE:-$OUT/cpu-measured.yaml}
fi
[[ $profile = /* ]] || profile=$here/$profile
export OMP_WAIT_POLICY=passive
threads=()
[[ $device == cpu ]] && threads=(--threads "${THREADS:-1}")
# The loop keeps its own budget; the outer limit only catches a hang in the loop itself.
timeout -k 10 "$((${BUDGET_S%.*} + 60))" python3 benchmarks/gpu_bench.py --device "$device" \
  --bin "$bin" --out "$OUT" --data "$work/data" --profile "$profile" --budget-s "$BUDGET_S" \
  --gpu "$gpu" --device-name "$device_name" --commit "${commit:-unknown}" "${threads[@]}"
rc=$?
# The model at the held-out batches (plans only, no GPU needed: the same check runs anywhere
# on the returned bench.json). A miss is reported, not an error of the measurement.
[[ -f $profile ]] && python3 benchmarks/gpu_bench_check.py "$OUT/bench.json" "$profile" \
  --bin "$bin" --out "$OUT/check"
exit $rc

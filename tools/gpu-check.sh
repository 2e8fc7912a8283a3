#!/usr/bin/env bash
# One short GPU session, every GPU line of issues 3, 5 and 6 in one command:
#   - test_gpu: every CUDA op against the CPU op, the CUDA trainer's loss trace against the
#     CPU's (TGN in both attention styles, JODIE, APAN);
#   - test_dist_gpu under mpirun with 1 and 2 ranks (NCCL with one rank, MPI over CUDA
#     tensors), and test_strict's CudaRanksOverMpiMatchOneRank (two CUDA ranks sharing GPU 0
#     over MPI against the 1-rank CUDA trainer);
#   - issue 16: test_depbloom's CudaRanksOverMpiFollowCpuRanks (the depbloom strategy with
#     two CUDA ranks sharing GPU 0 over MPI against two CPU ranks);
#   - depbloom-train with one NCCL rank, and with two CUDA ranks over MPI next to one rank;
#   - the CUDA cases of bench_gemm and bench_gru, and TGN, JODIE and APAN trained on WIKI
#     on the GPU (benchmarks/train_models.sh);
#   - issue 19: the cost model's TGN WIKI epoch on PROFILE (default h200-nvlink) against
#     the measured one (docs/cost_model.md);
#   - issue 15: host waits per training step of a warm depbloom-train run on the GPU (one,
#     the loss read, is the goal), and the hung-rank check (tests/mpi/rank_hang.sh) with two
#     CUDA ranks sharing GPU 0 over MPI (and over NCCL where there are two GPUs);
#   - with the time left, compute-sanitizer's memcheck over the op suites.
# Each step has a time limit and the whole stays within BUDGET_S seconds (default 540).
# $OUT (default ./gpu-check-out) receives summary.txt (one line per step), logs.tar.gz
# (every log and run folder, rewritten after each step, so a cut-off run still returns
# what it did) and train_models.json.
#
#   tools/gpu-check.sh [--build DIR]
#
# Programs: from .gpu-kit/kit.tar.xz when present (made here by tools/gpu-kit.sh: for a GPU
# machine without DepBloom's dependencies, such as the lent H200), else built in the build
# folder DIR (default build-gpu: a CUDA build for sm_90 of its own).
set -uo pipefail
here=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
root=$PWD
# shellcheck source=tools/gpu-kit-env.sh
source tools/gpu-kit-env.sh
build=$root/build-gpu
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) [[ $2 = /* ]] && build=$2 || build=$here/$2; shift ;;
    -h | --help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
OUT=${OUT:-$root/gpu-check-out}
BUDGET_S=${BUDGET_S:-540}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/gpu-check.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
summary=$OUT/summary.txt
: >"$summary"

note() { echo "$*" | tee -a "$summary"; }
# report COMMAND FILE...: one summary line from run folders (benchmarks/gpu_check_report.py).
report() { python3 benchmarks/gpu_check_report.py "$@" | tee -a "$summary"; }
# Checkpoints stay out: the returned files are capped at 16 MB each.
pack() { tar -C "$work" --exclude='*.ckpt' -czf "$OUT/logs.tar.gz" logs 2>/dev/null; }
# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in logs/NAME.log, within
# LIMIT_S and what is left of the budget; one summary line with its exit code and time.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET_S - SECONDS))
  if ((left < 20)); then
    note "$name: skipped (budget spent)"
    return 1
  fi
  ((limit > left)) && limit=$left
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  note "$name: rc=$rc in $((SECONDS - t0)) s$( ((rc == 124 || rc == 137)) && echo " (time limit $limit s)")"
  pack
  return $rc
}

{
  date -u +%FT%TZ
  nvidia-smi || true
  nproc
  uname -a
  head -2 /etc/os-release 2>/dev/null
} >"$logs/machine.log" 2>&1

# ---- the programs --------------------------------------------------------------------
if [[ -f .gpu-kit/kit.tar.xz ]]; then
  kit=$work/kit
  use_gpu_kit "$kit" "$logs/libraries.log" || { note "the kit did not unpack"; exit 2; }
  bin=$kit/bin
  cp "$kit/README" "$logs/kit-README.txt"
  mpirun=$kit/root/usr/bin/orterun
else
  # shellcheck disable=SC2016  # the inner shell expands its own arguments
  step build 400 bash -c 'cmake -S . -B "$0" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="$1" && cmake --build "$0" -j "$(nproc)"' \
    "$build" "${CMAKE_CUDA_ARCHITECTURES:-90}"
  bin=$work/bin
  mkdir -p "$bin"
  for p in depbloom-train depbloom-data tests/test_gpu tests/test_dist_gpu tests/test_strict \
    tests/test_depbloom benchmarks/bench_gemm benchmarks/bench_gru; do
    [[ -x $build/$p ]] && ln -s "$build/$p" "$bin/"
  done
  mpirun=$(command -v mpirun || echo mpirun)
fi
for p in "$bin"/*; do
  echo "== $p"
  ldd "$p" | grep -v 'linux-vdso'
done >"$logs/ldd.log" 2>&1
grep -q 'not found' "$logs/ldd.log" && note "libraries missing: $(grep 'not found' "$logs/ldd.log" | sort -u | tr -s ' \t' ' ' | paste -sd';')"

# Open MPI as root, ranks sharing the cores and one GPU, no kernel-assisted copies.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
export OMP_WAIT_POLICY=passive
launch=("$mpirun" --bind-to none -x LD_LIBRARY_PATH -x OPAL_PREFIX -x PMIX_INSTALL_PREFIX)
quick=(--device cuda --set train.epoch=1 --set run.max_batches=30 --set run.progress=false)
# MPI itself first (two CPU ranks, a few steps): with shared memory, else over TCP alone.
cpu_smoke=(-np 2 -x OMP_NUM_THREADS=2 "$bin/depbloom-train" --device cpu --set train.epoch=1
  --set run.max_batches=2 --set data.max_events=20000 --set run.progress=false)
if ! step mpi_smoke 60 "${launch[@]}" "${cpu_smoke[@]}" --out "$logs/runs/mpi_smoke"; then
  export OMPI_MCA_btl=self,tcp
  step mpi_smoke_tcp 60 "${launch[@]}" "${cpu_smoke[@]}" --out "$logs/runs/mpi_smoke_tcp"
fi

# ---- issues 3 and 5: ops and the trainer against the CPU -----------------------------
step test_gpu 240 "$bin/test_gpu"
# ---- issue 6: communicators and the strict strategy on CUDA --------------------------
step dist_gpu_np1 90 "${launch[@]}" -np 1 "$bin/test_dist_gpu"
step dist_gpu_np2 90 "${launch[@]}" -np 2 -x OMP_NUM_THREADS=4 "$bin/test_dist_gpu"
step strict_cuda_np2 150 "${launch[@]}" -np 2 -x OMP_NUM_THREADS=4 "$bin/test_strict" \
  --gtest_filter='*Cuda*'
# ---- issue 16: the depbloom strategy, two CUDA ranks on GPU 0 over MPI against two CPU ranks
step depbloom_cuda_np2 150 "${launch[@]}" -np 2 -x OMP_NUM_THREADS=4 "$bin/test_depbloom" \
  --gtest_filter='*Cuda*'
step train_nccl_np1 120 "${launch[@]}" -np 1 "$bin/depbloom-train" "${quick[@]}" \
  --set dist.communicator=nccl --out "$logs/runs/nccl_np1"
step train_cuda_1rank 120 "$bin/depbloom-train" "${quick[@]}" --set run.max_batches=4 \
  --out "$logs/runs/cuda_1rank"
step train_cuda_mpi_np2 120 "${launch[@]}" -np 2 -x OMP_NUM_THREADS=4 "$bin/depbloom-train" \
  "${quick[@]}" --set run.max_batches=4 --set dist.communicator=mpi --out "$logs/runs/cuda_mpi_np2"
if [[ -f $logs/runs/cuda_1rank/metrics.jsonl && -f $logs/runs/cuda_mpi_np2/metrics.jsonl ]]; then
  report ranks "$logs/runs/cuda_1rank/metrics.jsonl" "$logs/runs/cuda_mpi_np2/metrics.jsonl"
fi
# ---- issue 15: host waits per step, a hung GPU rank -----------------------------------
step host_waits 90 "$bin/depbloom-train" "${quick[@]}" --set train.epoch=2 \
  --out "$logs/runs/host_waits"
if [[ -f $logs/runs/host_waits/metrics.jsonl ]]; then
  report host-waits "$logs/runs/host_waits/metrics.jsonl"
fi
# rank_hang.sh starts `depbloom-train --ranks 2`, which runs `mpirun`: the kit's, by PATH.
hang_path=$work/hang-bin
mkdir -p "$hang_path"
[[ -x $mpirun ]] && ln -sf "$mpirun" "$hang_path/mpirun"
step rank_hang_cuda_mpi 70 env PATH="$hang_path:$PATH" bash tests/mpi/rank_hang.sh \
  "$bin/depbloom-train" "$logs/runs/rank_hang_cuda_mpi" cuda mpi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if ((gpus >= 2)); then
  step rank_hang_nccl 70 env PATH="$hang_path:$PATH" bash tests/mpi/rank_hang.sh \
    "$bin/depbloom-train" "$logs/runs/rank_hang_nccl" cuda nccl
fi
grep -h '^exit=' "$logs"/rank_hang_*.log 2>/dev/null | sed 's/^/rank hang: /' | tee -a "$summary"
# ---- speed ---------------------------------------------------------------------------
step bench_gemm 90 "$bin/bench_gemm" --benchmark_filter=Cuda --benchmark_min_time=0.1 \
  --benchmark_out="$logs/bench_gemm.json" --benchmark_out_format=json
step bench_gru 90 "$bin/bench_gru" --benchmark_filter=Cuda --benchmark_min_time=0.1 \
  --benchmark_out="$logs/bench_gru.json" --benchmark_out_format=json
step train_models 300 env DEVICE=cuda:0 EPOCHS="${EPOCHS:-3}" \
  OUT="$OUT/train_models.json" RUNS="$logs/runs/train_models" \
  MODELS="tgn-wiki jodie-wiki apan-wiki" benchmarks/train_models.sh --build "$bin"
# ---- issue 19: the cost model's single-GPU epoch (h200-nvlink, or PROFILE) against TGN's
if [[ -f $logs/runs/train_models/tgn-wiki/metrics.jsonl ]]; then
  "$bin/depbloom-train" --config configs/tgn-wiki.yaml --plan --profile "${PROFILE:-h200-nvlink}" \
    2>"$logs/cost_model.log" | grep '^{"plan"' >"$logs/cost_model.json"
  report cost-model "$logs/runs/train_models/tgn-wiki/metrics.jsonl" "$logs/cost_model.json"
fi
# ---- with what is left: compute-sanitizer's memcheck over the op suites ---------------
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [[ -n $sanitizer ]]; then
  step memcheck 150 "$sanitizer" --tool memcheck --error-exitcode 1 "$bin/test_gpu" \
    --gtest_filter='GpuRows.*:GpuAttention.*:GpuDense.*:GpuMul.*:GpuScaleRows.*:GpuEdges.*:GpuRefiner.*'
fi
pack
note "total: $SECONDS s"
tail -n 25 "$logs/test_gpu.log"

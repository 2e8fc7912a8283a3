#!/usr/bin/env bash
# One short GPU session: build with CUDA for the local GPU, run the GPU suite (ops against
# the CPU, the trainer's loss trace against the CPU's), the op benchmarks and a short
# training benchmark on the GPU, and leave every log in $OUT (default ./gpu-check-out).
# Meant for a machine with a GPU and the CUDA toolkit.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT"
ARCH=${CMAKE_CUDA_ARCHITECTURES:-90}
{
  nvidia-smi || true
  start=$SECONDS
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" &&
    cmake --build build-gpu -j "$(nproc)"
  echo "build: $((SECONDS - start)) s"
} >"$OUT/build.log" 2>&1
build-gpu/tests/test_gpu --gtest_brief=0 >"$OUT/test_gpu.log" 2>&1
echo "test_gpu rc=$?" >>"$OUT/summary.txt"
for b in build-gpu/benchmarks/bench_*; do
  [ -x "$b" ] || continue
  timeout 120 "$b" --benchmark_min_time=0.2 --benchmark_format=json >"$OUT/$(basename "$b").json" \
    2>"$OUT/$(basename "$b").err"
  echo "$(basename "$b") rc=$?" >>"$OUT/summary.txt"
done
# Training on the GPU: TGN, JODIE and APAN on WIKI, EPOCHS (default 1) each.
BUILD=build-gpu DEVICE=cuda:0 EPOCHS=${EPOCHS:-1} OUT="$OUT/train_models.json" \
  RUNS="$OUT/runs" MODELS="tgn-wiki jodie-wiki apan-wiki" \
  timeout 400 benchmarks/train_models.sh >"$OUT/train_models.log" 2>&1
echo "train_models rc=$?" >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
tail -n 30 "$OUT/test_gpu.log"

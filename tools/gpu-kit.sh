#!/usr/bin/env bash
# Packs what tools/gpu-check.sh and tools/gpu-bench.sh need on a GPU machine that has the
# CUDA toolkit but none of DepBloom's other dependencies (the lent H200 machine: CUDA 13 and
# Python, no yaml-cpp, spdlog, OpenBLAS, MPI or GoogleTest, and no network): the CUDA build's
# programs, every shared library they load apart from glibc's, libstdc++'s and CUDA's own
# (cudart, cuBLAS, NCCL, cuDNN: the GPU machine's), and a relocatable copy of Open MPI's
# launcher, plugins and help files. Writes .gpu-kit/kit.tar.xz (git-ignored; the device
# tool carries it).
#
#   tools/gpu-kit.sh                    # builds build-kit first when needed
#   tools/gpu-kit.sh --build build-other
#
# --build DIR names the build folder (default build-kit, a build of its own; relative to
# the starting folder). The build is Release, CUDA for sm_90 (H100/H200) unless
# CMAKE_CUDA_ARCHITECTURES says otherwise, and without -march=native (DEPBLOOM_NATIVE=OFF):
# the GPU machine's CPU may lack this machine's instructions. Needs the CUDA toolkit here,
# of the GPU machine's major version (the programs load libcudart.so.<major> there).
set -euo pipefail
here=$PWD
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-kit
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) [[ $2 = /* ]] && build=$2 || build=$here/$2; shift ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
cd "$root"
ARCH=${CMAKE_CUDA_ARCHITECTURES:-90}
kit=$root/.gpu-kit
stage=$kit/stage

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEPBLOOM_CUDA=ON \
    -DDEPBLOOM_NATIVE=OFF -DCMAKE_CUDA_ARCHITECTURES="$ARCH"
fi
grep -q 'DEPBLOOM_WITH_CUDA:INTERNAL=ON\|DEPBLOOM_CUDA:STRING=ON' "$build/CMakeCache.txt" ||
  echo "warning: $build may not be a CUDA build" >&2
cmake --build "$build" -j "$(nproc)"

rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"
programs=("$build/depbloom-train" "$build/depbloom-data" "$build"/tests/test_gpu
  "$build"/tests/test_dist_gpu "$build"/tests/test_strict "$build"/tests/test_depbloom
  "$build"/tests/test_backend
  "$build"/benchmarks/bench_gemm "$build"/benchmarks/bench_gru
  "$build"/benchmarks/bench_memory "$build"/benchmarks/bench_sampler)
for p in "${programs[@]}"; do
  [[ -x $p ]] || { echo "missing $p" >&2; exit 1; }
  cp "$p" "$stage/bin/"
done

# Open MPI (Debian's layout under /usr): the launcher, its plugins and help files, and
# PMIx's. OPAL_PREFIX (and PMIX_INSTALL_PREFIX) point them at the unpacked copy.
mpi_files=()
if command -v orterun >/dev/null; then
  mpi_files+=(/usr/bin/orterun /usr/bin/orted /usr/lib/x86_64-linux-gnu/openmpi
    /usr/share/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/pmix /etc/openmpi)
fi
for f in "${mpi_files[@]}"; do
  [[ -e $f ]] || continue
  mkdir -p "$stage/root$(dirname "$f")"
  cp -a "$f" "$stage/root$(dirname "$f")/"
done

# Every shared library the programs and the MPI plugins load, resolved here, except the
# ones the GPU machine must bring itself.
keep_out='^(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl|libcudnn[a-z_]*|libnvidia-[a-z-]*|linux-vdso)\.so'
objects=("$stage"/bin/*)
while IFS= read -r -d '' so; do objects+=("$so"); done < <(find "$stage/root" -name '*.so*' -type f -print0 2>/dev/null)
for o in "${objects[@]}"; do
  ldd "$o" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $keep_out ]] && continue
  cp -L "$path" "$stage/lib/$name"
done

cat >"$stage/README" <<EOF
DepBloom GPU kit, made by tools/gpu-kit.sh on $(hostname) at $(date -u +%FT%TZ)
from $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)').
bin/: the CUDA build's programs; lib/: the libraries they load (not glibc, libstdc++ or CUDA's);
root/: Open MPI and PMIx as installed under /usr here (set OPAL_PREFIX=<kit>/root/usr).
source folder: $root
EOF
tar -C "$stage" -cJf "$kit/kit.tar.xz" .
rm -rf "$stage"
du -h "$kit/kit.tar.xz"

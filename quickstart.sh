#!/usr/bin/env bash
# DepBloom quick start. Two commands, both idempotent on a fresh Debian 12 machine:
#   bash quickstart.sh train [depbloom-train options]   install, build, run the default training
#   bash quickstart.sh test                             install, build, run the whole test suite
# Packages are installed only when missing (apt-get update runs only then). The build is
# CMake + Ninja, Release, all cores; CUDA is compiled wherever nvcc is found.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PACKAGES=(build-essential cmake pkg-config git ca-certificates
  libopenblas-openmp-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev libgtest-dev
  libbenchmark-dev nlohmann-json3-dev libopenmpi-dev openmpi-bin libmetis-dev ninja-build
  clang libclang-rt-14-dev libomp-14-dev python3-matplotlib clang-tidy python3-pyflakes
  libcurl4-openssl-dev python3-numpy)
JOBS=${DEPBLOOM_JOBS:-$(nproc)}
BUILD=${DEPBLOOM_BUILD_DIR:-build}

log() { printf '\033[1m[quickstart]\033[0m %s\n' "$*"; }

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "all packages present"
    return
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  log "installing: ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
}

# configure_and_build DIR [cmake options...]
configure_and_build() {
  local dir=$1
  shift
  local cuda_arch=()
  # CI builds one architecture (H100/H200) to save compile time; users get 80 and 90.
  if [ "${CI:-}" = "true" ] && [ -z "${CMAKE_CUDA_ARCHITECTURES:-}" ]; then
    cuda_arch=(-DCMAKE_CUDA_ARCHITECTURES=90)
  elif [ -n "${CMAKE_CUDA_ARCHITECTURES:-}" ]; then
    cuda_arch=(-DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES}")
  fi
  log "configuring $dir"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_arch[@]}" "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
  grep -E "DepBloom:" "$dir.configure.log" || true
  log "building $dir with $JOBS jobs"
  local start=$SECONDS
  cmake --build "$dir" -j "$JOBS"
  log "built $dir in $((SECONDS - start)) s"
}

# run_ctest DIR [ctest options...]: runs the suite, keeps its summary for the final line.
SUMMARY_FILES=()
run_ctest() {
  local dir=$1
  shift
  local out="$dir/ctest-summary.log"
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout 1500 "$@" 2>&1 | tee "$out"
  local rc=${PIPESTATUS[0]}
  SUMMARY_FILES+=("$out")
  return "$rc"
}

print_summary() {
  local passed=0 failed=0 skipped=0
  for f in "${SUMMARY_FILES[@]}"; do
    local line total nfail nskip
    line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$f" | tail -n 1)
    total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
    nfail=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")
    nskip=$(grep -c "(Skipped)" "$f" || true)
    passed=$((passed + total - nfail - nskip))
    failed=$((failed + nfail))
    skipped=$((skipped + nskip))
  done
  echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
}

cmd_train() {
  install_packages
  configure_and_build "$BUILD"
  log "running: $BUILD/depbloom-train $*"
  exec "$BUILD/depbloom-train" "$@"
}

cmd_test() {
  install_packages
  local t0=$SECONDS rc=0
  # 1. The main build (CUDA compiled where nvcc exists; GPU tests skip without a GPU).
  configure_and_build "$BUILD"
  run_ctest "$BUILD" || rc=1
  # Lint: clang-tidy over the C++ files the last commit touched (a function over 80 lines
  # fails), pyflakes over benchmarks/ and tools/.
  bash tools/lint.sh --build "$BUILD" || rc=1
  # 2. A CPU-only build, proving the project builds and passes without any CUDA header.
  if [ "${DEPBLOOM_SKIP_CPU_ONLY:-0}" != "1" ]; then
    configure_and_build "$BUILD-cpu-only" -DDEPBLOOM_CUDA=OFF -DDEPBLOOM_BUILD_BENCHMARKS=OFF
    run_ctest "$BUILD-cpu-only" -L unit || rc=1
  fi
  # 3. Fuzzers: clang with libFuzzer, AddressSanitizer and UBSan over the input readers.
  if [ -x tests/fuzz/run_fuzzers.sh ] && [ "${DEPBLOOM_SKIP_FUZZ:-0}" != "1" ]; then
    CC=clang CXX=clang++ configure_and_build "$BUILD-fuzz" -DDEPBLOOM_FUZZ=ON -DDEPBLOOM_CUDA=OFF \
      -DDEPBLOOM_BUILD_TESTS=OFF -DDEPBLOOM_BUILD_BENCHMARKS=OFF -DDEPBLOOM_MPI=OFF
    tests/fuzz/run_fuzzers.sh "$BUILD-fuzz" || rc=1
  fi
  # 4. ThreadSanitizer: clang + libomp (with the Archer tool), the libraries and only the
  #    tsan suite (the pipelined trainer's side thread against the main thread's OpenMP team).
  if [ "${DEPBLOOM_SKIP_TSAN:-0}" != "1" ]; then
    local dir="$BUILD-tsan" start=$SECONDS
    log "configuring $dir"
    CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEPBLOOM_TSAN=ON \
      -DDEPBLOOM_CUDA=OFF -DDEPBLOOM_BUILD_BENCHMARKS=OFF -DDEPBLOOM_MPI=OFF >"$dir.configure.log" 2>&1 ||
      { cat "$dir.configure.log"; exit 1; }
    cmake --build "$dir" -j "$JOBS" --target test_pipeline_tsan
    log "built $dir in $((SECONDS - start)) s"
    run_ctest "$dir" -L tsan || rc=1
  fi
  log "test command finished in $((SECONDS - t0)) s"
  print_summary
  return "$rc"
}

case "${1:-}" in
  train) shift; cmd_train "$@" ;;
  test) shift; cmd_test "$@" ;;
  *)
    echo "usage: bash quickstart.sh train [depbloom-train options] | bash quickstart.sh test" >&2
    exit 2
    ;;
esac

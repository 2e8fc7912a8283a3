#!/usr/bin/env bash
# Runs each libFuzzer target of the data readers for 200,000 iterations or 120 s, whichever
# comes first, seeded from tests/fixtures/data and tests/fuzz/corpus/<target>. Exits
# non-zero on any finding (crash, sanitizer report, leak, timeout, out-of-memory).
# Usage: tests/fuzz/run_fuzzers.sh BUILD_DIR [extra libFuzzer flags...]
set -u
if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [libFuzzer flags...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
fixtures="$here/../fixtures/data"
runs=${FUZZ_RUNS:-200000}
seconds=${FUZZ_SECONDS:-120}
failed=0
for target in fuzz_text_loaders fuzz_npy; do
  binary="$build/tests/fuzz/$target"
  if [[ ! -x "$binary" ]]; then
    echo "missing $binary (build it with -DDEPBLOOM_FUZZ=ON)" >&2
    failed=1
    continue
  fi
  # New inputs go to a scratch corpus; the seed folders stay as committed.
  work="$build/fuzz-work/$target"
  artifacts="$build/fuzz-artifacts/$target"
  rm -rf "$work" "$artifacts"
  mkdir -p "$work" "$artifacts"
  seeds=("$here/corpus/$target")
  while IFS= read -r -d '' dir; do seeds+=("$dir"); done \
    < <(find "$fixtures" -mindepth 1 -type d -print0)
  echo "== $target: -runs=$runs -max_total_time=$seconds"
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    "$binary" -runs="$runs" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 "$@" "$work" "${seeds[@]}" \
    2>&1 | tee "$build/fuzz-artifacts/$target.log" | grep -E "^(#[0-9]+ +DONE|Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY|.*runtime error)" 
  status=${PIPESTATUS[0]}
  found=$(find "$artifacts" -type f | wc -l)
  echo "== $target: exit $status, $found artifact(s); log in $build/fuzz-artifacts/$target.log"
  if [[ $status -ne 0 || $found -ne 0 ]]; then failed=1; fi
done
exit $failed

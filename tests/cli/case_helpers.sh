# shellcheck shell=bash disable=SC2154
# Sourced by the depbloom-train case scripts (tests/cli/checkpoint_cases.sh,
# tests/mpi/mpi_cli_cases.sh); each sets $case, the case's name, first.

fail() {
  echo "FAIL ($case): $*" >&2
  exit 1
}

# run_checked EXPECTED_RC COMMAND...: runs COMMAND (at most CASE_TIMEOUT seconds, default
# 300), keeps its output in $out and prints its last CASE_TAIL lines (default all), then
# checks the exit code.
run_checked() {
  local expected=$1
  shift
  out=$(timeout "${CASE_TIMEOUT:-300}" "$@" 2>&1)
  local rc=$?
  if [[ -n ${CASE_TAIL:-} ]]; then printf '%s\n' "$out" | tail -n "$CASE_TAIL"; else printf '%s\n' "$out"; fi
  echo "exit=$rc (expected $expected)"
  [[ $rc -eq $expected ]] || fail "exit code $rc, expected $expected"
}

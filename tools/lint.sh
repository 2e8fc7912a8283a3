#!/usr/bin/env bash
# Lint for CI and before a commit: clang-tidy (.clang-tidy) over the C++ files a change
# touches, then pyflakes over benchmarks/ and tools/. A function over 80 lines
# (readability-function-size) in a linted file, a file clang-tidy cannot compile, or a
# pyflakes warning fails, with its lines; clang-tidy's other findings are counted per check.
#
#   tools/lint.sh [--build DIR] [--base REF | --all] [--jobs N] [--verbose] [FILE...]
#
#   --build DIR  the build folder whose compile_commands.json clang-tidy reads (default
#                build; relative to the starting folder)
#   --base REF   the files changed since REF's merge base with HEAD, committed or not
#                (default HEAD~1: the last commit and the uncommitted changes; without a
#                parent commit, the uncommitted changes)
#   --all        every C++ file instead of the changed ones
#   --jobs N     clang-tidy processes at once (default: the cores)
#   --verbose    every clang-tidy warning, one line each (default: their count per check)
#   FILE...      these files instead of the changed ones
# C++ files are the .cpp and .h files under src/, include/, tools/ and benchmarks/ (not
# CUDA's .cu and .cuh, nor tests/). Exits 1 on a failure, 2 when a tool or the compile
# database is missing.
set -euo pipefail
here=$PWD
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=build base="" all=no verbose=no jobs=$(nproc) files=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift ;;
    --base) base=$2; shift ;;
    --all) all=yes ;;
    --jobs) jobs=$2; shift ;;
    --verbose) verbose=yes ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) files+=("$(realpath --relative-to="$root" "$1")") ;;
  esac
  shift
done
[[ $build = /* ]] || build=$here/$build
cd "$root"

log() { echo "[lint] $*" >&2; }

# The files to consider, one a line: the changed ones, all of them, or those named.
candidates() {
  if ((${#files[@]})); then
    printf '%s\n' "${files[@]}"
  elif [[ $all == yes ]]; then
    git ls-files
  else
    local ref=${base:-HEAD~1} merge
    [[ -n $base ]] || git rev-parse -q --verify HEAD~1 >/dev/null || ref=HEAD
    merge=$(git merge-base "$ref" HEAD) || return
    git diff --name-only --diff-filter=d "$merge" || return
    git ls-files --others --exclude-standard
  fi
}

# The C++ files among the candidates, one a line.
cpp_files() {
  local list
  list=$(candidates) || return
  grep -E '^(src|include|tools|benchmarks)/.*\.(cpp|h)$' <<<"$list" | sort -u || true
}

# clang_tidy FILE...: clang-tidy over the files, each one's output in $logs; on stdout the
# errors with the notes that give a function's size, and the warnings (each once) or their
# count per check. Fails when any file fails.
clang_tidy() {
  local tidy
  tidy=$(command -v clang-tidy || command -v clang-tidy-14) ||
    { log "clang-tidy is missing (apt-get install clang-tidy)"; exit 2; }
  [[ -f $build/compile_commands.json ]] ||
    { log "no $build/compile_commands.json: configure first (cmake -S . -B $build)"; exit 2; }
  local rc=0
  # shellcheck disable=SC2016  # the inner shell expands its own arguments
  printf '%s\0' "$@" | xargs -0 -n 1 -P "$jobs" bash -c \
    '"$0" -p "$1" --quiet --warnings-as-errors=readability-function-size "$3" \
       >"$2/${3//\//_}.log" 2>&1 || { echo "$3" >>"$2/failed"; exit 1; }' \
    "$tidy" "$build" "$logs" || rc=1
  cat "$logs"/*.log | grep -E ': error: |: note: .*threshold' | awk '!seen[$0]++' || true
  local warnings
  warnings=$(cat "$logs"/*.log | grep -E ': warning: ' | awk '!seen[$0]++' || true)
  if [[ $verbose == yes ]]; then
    [[ -z $warnings ]] || echo "$warnings"
  else
    grep -oE '\[[a-z-]+[],]' <<<"$warnings" | tr -d '[],' | sort | uniq -c | sort -rn |
      awk '{ printf "[lint] %d warnings %s\n", $1, $2 }' >&2
  fi
  [[ ! -f $logs/failed ]] || log "failed: $(sort "$logs/failed" | paste -sd' ')"
  return "$rc"
}

pyflakes() {
  local py
  for py in python3 /usr/bin/python3; do
    if "$py" -c 'import pyflakes' 2>/dev/null; then
      "$py" -m pyflakes benchmarks tools
      return
    fi
  done
  log "pyflakes is missing (apt-get install python3-pyflakes)"
  exit 2
}

status=0 start=$SECONDS
list=$(cpp_files) || { log "cannot list the changed files"; exit 2; }
cpp=()
[[ -z $list ]] || mapfile -t cpp <<<"$list"
if ((${#cpp[@]})); then
  logs=$(mktemp -d)
  trap 'rm -rf "$logs"' EXIT
  log "clang-tidy over ${#cpp[@]} file(s) with $build/compile_commands.json"
  clang_tidy "${cpp[@]}" || status=1
else
  log "clang-tidy: no C++ file to lint"
fi
log "pyflakes over benchmarks/ and tools/"
pyflakes || status=1
log "$( ((status)) && echo failed || echo passed) in $((SECONDS - start)) s"
exit $status

# shellcheck shell=bash disable=SC2034,SC2154  # variables set here or by the sourcing script
# Shared by the training benchmarks (train_models.sh, strict_scaling.sh, calibrate.sh,
# partition.sh, pipeline.sh, refine.sh, speedup.sh); sourced, after the script set `here`
# (the starting folder), `root` (the repository) and `tag` (its name in log lines).

absolute() { [[ $1 = /* ]] && echo "$1" || echo "$here/$1"; }

log() { echo "[$tag] $*" >&2; }

# use_build DIR [mpi]: the programs of the build folder DIR (the script's --build, relative
# to the starting folder): $build, $train (depbloom-train) and $data_tool (depbloom-data,
# for the synthetic shapes). Exits 2 unless depbloom-train is there and python3 (for the
# reports) is found, and with `mpi`, mpirun (for --ranks).
use_build() {
  build=$(absolute "$1")
  train=$build/depbloom-train
  data_tool=$build/depbloom-data
  [[ -x $train ]] || { echo "no $train: build first, or name the build folder (--build DIR)" >&2; exit 2; }
  command -v python3 >/dev/null || { echo "python3 is needed to write the JSON" >&2; exit 2; }
  [[ ${2:-} != mpi ]] || command -v mpirun >/dev/null ||
    { echo "mpirun is needed for --ranks" >&2; exit 2; }
}

# report NAME ARG...: benchmarks/NAME_report.py, the script's arithmetic and its JSON.
report() { python3 "$root/benchmarks/$1_report.py" "${@:2}"; }

# A synthetic stream with a published dataset's shape (configs/README.md), made once by
# $data_tool with the published edge-feature width (172 for wiki and reddit, 0 for wikitalk)
# into data/synth/LIKE-sSCALE-fWIDTH, the folder the *-synth-* configs name at scale 0.1.
need_synth() {
  local like=$1 scale=${2:-0.1} dir
  dir=$(synth_dir "$like" "$scale")
  [[ -e $dir/meta.json ]] && return 0
  [[ -x $data_tool ]] || { log "no $data_tool to generate $dir"; return 1; }
  log "generating $dir"
  "$data_tool" synth --like "$like" --scale "$scale" --seed 0 --edge-features "$(synth_width "$like")" -o "$dir"
}

# The folder need_synth LIKE SCALE writes.
synth_dir() { echo "data/synth/$1-s${2:-0.1}-f$(synth_width "$1")"; }
# The published edge-feature width of a shape (depbloom-data synth's default).
synth_width() { [[ $1 == wikitalk ]] && echo 0 || echo 172; }

# dataset_data NAME [SCALE]: the --data of a benchmark dataset on stdout, relative to the
# repository: wiki, the shipped WIKI stream; reddit or wikitalk, that synthetic shape at
# SCALE (default 0.1), made once. Logs and returns 1 when it is unknown or cannot be made.
dataset_data() {
  case $1 in
    wiki) echo data/wikipedia/wikipedia_edges.csv ;;
    reddit | wikitalk)
      need_synth "$1" "${2:-0.1}" >&2 || { log "no $1 data"; return 1; }
      synth_dir "$1" "${2:-0.1}" ;;
    *) log "unknown dataset $1 (wiki, reddit, wikitalk)"; return 1 ;;
  esac
}

# start_runs OUT_DIR: the common start of the benchmarks that record runs in a manifest
# (partition.sh, pipeline.sh, refine.sh, speedup.sh; after use_build, with `work` set):
# $cores, a fresh run folder $runs under $work with an empty $manifest, the folder OUT_DIR
# for the results, and the repository as the working folder (configs name data relative
# to it). With `resume` set, that folder and its manifest are kept and added to.
start_runs() {
  cores=$(nproc)
  runs=${resume:-$work/$(date +%Y%m%d-%H%M%S)}
  manifest=$runs/manifest.tsv
  cd "$root" || exit 2
  mkdir -p "$runs" "$1"
  [[ -n ${resume:-} ]] || : >"$manifest"
  touch "$manifest"
}

# Whether $manifest records run folder $1 as finished, for --resume (its last two columns
# are the folder and the exit code).
finished_run() {
  awk -F'\t' -v d="$1" '$(NF - 1) == d && $NF == 0 { found = 1 } END { exit !found }' "$manifest"
}

# rank_threads P: CPU threads per rank so that P ranks x threads <= the cores where
# possible; one thread a rank beyond that.
rank_threads() { echo $((cores / $1 > 0 ? cores / $1 : 1)); }

# record FIELD...: one tab-separated line in $manifest.
record() { (IFS=$'\t'; printf '%s\n' "$*") >>"$manifest"; }

# train_into DIR OPTION...: one training run, `$train OPTION... --out DIR`, its output in
# DIR/train.log. A failure is logged, sets status=1 and is returned.
train_into() {
  local dir=$1 rc=0
  shift
  mkdir -p "$dir"
  "$train" "$@" --out "$dir" >"$dir/train.log" 2>&1 || rc=$?
  ((rc == 0)) || { log "failed with exit code $rc (see $dir/train.log)"; status=1; }
  return "$rc"
}

# run_and_record DIR FIELD... -- OPTION...: train_into DIR OPTION..., then the manifest
# line FIELD... DIR EXIT_CODE.
run_and_record() {
  local dir=$1 fields=() rc=0
  shift
  while [[ $1 != -- ]]; do fields+=("$1"); shift; done
  shift
  train_into "$dir" "$@" || rc=$?
  record "${fields[@]}" "$dir" "$rc"
}

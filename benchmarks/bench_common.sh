# Shared by the training benchmarks (train_models.sh, strict_scaling.sh, partition.sh,
# pipeline.sh, refine.sh); sourced, after the script set `here` (the starting folder),
# `root` (the repository) and `tag` (its name in log lines).

absolute() { [[ $1 = /* ]] && echo "$1" || echo "$here/$1"; }

log() { echo "[$tag] $*" >&2; }

# Fails with exit 2 unless $BUILD holds depbloom-train and python3 (for the JSON) exists.
require_tools() {
  train=$BUILD/depbloom-train
  [[ -x $train ]] || { echo "no $train: build first (BUILD=folder)" >&2; exit 2; }
  command -v python3 >/dev/null || { echo "python3 is needed to write the JSON" >&2; exit 2; }
}

# A synthetic stream with a published dataset's shape (configs/README.md), made once, by
# $data_tool when the script set one (DEPBLOOM_DATA), else $BUILD's depbloom-data: at scale
# 0.1 into data/synth/LIKE, at another scale into data/synth/LIKE-sSCALE.
need_synth() {
  local like=$1 scale=${2:-0.1} dir=data/synth/$1
  [[ $scale == 0.1 ]] || dir=data/synth/$like-s$scale
  [[ -e $dir/meta.json ]] && return 0
  local tool=${data_tool:-$BUILD/depbloom-data}
  [[ -x $tool ]] || { log "no $tool to generate $dir"; return 1; }
  log "generating $dir"
  "$tool" synth --like "$like" --scale "$scale" --seed 0 -o "$dir"
}

# The folder need_synth LIKE SCALE writes.
synth_dir() { [[ ${2:-0.1} == 0.1 ]] && echo "data/synth/$1" || echo "data/synth/$1-s$2"; }

# The common start of the benchmarks that record runs in a manifest (partition.sh,
# pipeline.sh, refine.sh; after `work` and `out` are set): the tools (DEPBLOOM_TRAIN,
# DEPBLOOM_DATA, default build-dev's), a fresh run folder $runs under $work with an empty
# $manifest, and the repository as the working folder (configs name data relative to it).
# `start_runs mpi` also needs mpirun. With `resume` set, that folder and its manifest are
# kept and added to.
start_runs() {
  train=$(absolute "${DEPBLOOM_TRAIN:-$root/build-dev/depbloom-train}")
  data_tool=$(absolute "${DEPBLOOM_DATA:-$root/build-dev/depbloom-data}")
  [[ -x $train ]] || { echo "no $train (DEPBLOOM_TRAIN=path)" >&2; exit 2; }
  command -v python3 >/dev/null || { echo "python3 is needed to write the JSON" >&2; exit 2; }
  [[ ${1:-} != mpi ]] || command -v mpirun >/dev/null ||
    { echo "mpirun is needed for --ranks" >&2; exit 2; }
  cores=$(nproc)
  runs=${resume:-$work/$(date +%Y%m%d-%H%M%S)}
  manifest=$runs/manifest.tsv
  cd "$root"
  mkdir -p "$runs" "$(dirname "$out")"
  [[ -n ${resume:-} ]] || : >"$manifest"
  touch "$manifest"
}

# Whether $manifest records run folder $1 as finished, for --resume (its last two columns
# are the folder and the exit code).
finished_run() {
  awk -F'\t' -v d="$1" '$(NF - 1) == d && $NF == 0 { found = 1 } END { exit !found }' "$manifest"
}

# The synthetic REDDIT shape at scale 0.1, made once: its folder on stdout.
reddit_data() {
  need_synth reddit >&2 && echo "$root/data/synth/reddit"
}

# Shared by the training benchmarks (train_models.sh, strict_scaling.sh); sourced, after
# the script set `here` (the starting folder), `root` (the repository) and `tag` (its name
# in log lines).

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

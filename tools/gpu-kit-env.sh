# shellcheck shell=bash
# Sourced by tools/gpu-check.sh and tools/gpu-bench.sh: the GPU kit (tools/gpu-kit.sh) on a
# machine that has no build of its own.
#
# use_gpu_kit DIR LIBRARIES_LOG: unpacks .gpu-kit/kit.tar.xz into DIR (DIR/bin holds the
# programs) and exports what they need to run here:
#   LD_LIBRARY_PATH  the kit's libraries, then the CUDA ones its programs link (cudart, cuBLAS,
#                    NCCL, cuDNN), found on this machine: the toolkit's or the Python
#                    packages' copies (nvidia-*); each one's path goes to LIBRARIES_LOG;
#   OPAL_PREFIX, PMIX_INSTALL_PREFIX  the kit's Open MPI (DIR/root/usr/bin/orterun);
# and links the source folder compiled into the tests and benches (they read the shipped
# data through it) to this checkout when that folder is absent.
use_gpu_kit() {
  local kit=$1 log=$2 root lib d found dirs=()
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  mkdir -p "$kit"
  tar -C "$kit" -xJf "$root/.gpu-kit/kit.tar.xz" || return 1
  : >"$log"
  for lib in $(readelf -d "$kit"/bin/* 2>/dev/null |
    grep -o 'lib\(cudart\|cublas\|cublasLt\|nccl\|cudnn\)[a-z_]*\.so[.0-9]*' | sort -u); do
    found=
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
      /usr/lib/x86_64-linux-gnu; do
      [[ -e $d/$lib ]] && found=$d/$lib && break
    done
    [[ -z $found ]] && found=$(find /opt /usr/local/lib /usr/lib/python3* -path '*nvidia*' \
      -name "$lib" 2>/dev/null | head -n 1)
    echo "$lib: ${found:-NOT FOUND}" >>"$log"
    [[ -n $found ]] && dirs+=("$(dirname "$found")")
  done
  local cuda_path
  cuda_path=$(printf '%s\n' "${dirs[@]}" | awk 'NF && !seen[$0]++' | paste -sd:)
  export LD_LIBRARY_PATH=$kit/lib${cuda_path:+:$cuda_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export OPAL_PREFIX=$kit/root/usr
  export PMIX_INSTALL_PREFIX=$kit/root/usr/lib/x86_64-linux-gnu/pmix2
  local src
  src=$(sed -n 's/^source folder: //p' "$kit/README")
  if [[ -n $src && ! -e $src/data/wikipedia ]]; then
    mkdir -p "$(dirname "$src")" && ln -sfn "$root" "$src"
  fi
}

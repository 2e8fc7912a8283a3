#!/usr/bin/env bash
# Calibrates the cost model's cpu-here profile from micro-benchmarks only, then (with
# --check) checks it against training runs the calibration did not use.
#
#   benchmarks/calibrate.sh            # micro-benchmarks -> configs/devices/cpu-here.yaml
#   benchmarks/calibrate.sh --check    # then TGN WIKI, 1 device and 2 ranks: modelled vs measured
#   benchmarks/calibrate.sh --check-only
#
# Environment (all optional):
#   BUILD    build folder with depbloom-train and benchmarks/bench_{gemm,memory,sampler,comm}
#            (default: build)
#   THREADS  CPU threads of one device (one rank) while calibrating and checking (default: 1,
#            so that two ranks fit this machine's cores side by side)
#   PROFILE  the file to write (default: configs/devices/cpu-here.yaml)
#   MAX_EVENTS  the WIKI prefix the check trains on (default: 60000)
#   RUNS     folder for the check's run folders (default: runs/calibrate-<time>)
# What each profile key is measured by:
#   gemm_gflop_s        bench_gemm, f32, harmonic mean over TGN's forward and weight-gradient shapes
#   memory_gb_s         bench_memory BM_Copy (64 MiB, bytes read + written)
#   op_launch_us        bench_memory BM_SmallOp (one op call on 16 floats)
#   host_plan_per_s     bench_sampler BM_PlanPass (the sample stage over WIKI, roots + slots per s)
#   all_reduce, all_gather  bench_comm under `mpirun -np 2`: latency = the 8-byte call,
#                       bandwidth = the 1 MiB call's bytes x (2(P-1)/P or (P-1)/P) / (t - latency)
# The check prints, per run, the measured and modelled epoch training seconds and each stage,
# and the relative error; it passes when the epoch is within 25%.
set -euo pipefail
here=$PWD
root=$(cd "$(dirname "$0")/.." && pwd)
tag=calibrate
source "$root/benchmarks/bench_common.sh"
BUILD=$(absolute "${BUILD:-build}")
THREADS=${THREADS:-1}
PROFILE=$(absolute "${PROFILE:-$root/configs/devices/cpu-here.yaml}")
MAX_EVENTS=${MAX_EVENTS:-60000}
RUNS=$(absolute "${RUNS:-runs/calibrate-$(date +%Y%m%d-%H%M%S)}")
mode=${1:-calibrate}
case $mode in
  calibrate | --check | --check-only) ;;
  *) echo "usage: $0 [--check | --check-only]" >&2; exit 2 ;;
esac
require_tools
bench=$BUILD/benchmarks
export OMP_NUM_THREADS=$THREADS OMP_WAIT_POLICY=passive
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

calibrate() {
  for b in bench_gemm bench_memory bench_sampler bench_comm; do
    [[ -x $bench/$b ]] || { log "no $bench/$b: build the benchmarks first"; exit 2; }
  done
  log "GEMM at TGN's shapes ($THREADS threads)"
  "$bench/bench_gemm" --benchmark_filter='BM_Gemm<float>|BM_GemmWeightGrad<float>' \
    --benchmark_min_time=0.5 --benchmark_format=json > "$tmp/gemm.json" 2> /dev/null
  log "memory bandwidth and op calls"
  "$bench/bench_memory" --benchmark_min_time=0.5 --benchmark_format=json > "$tmp/memory.json"
  log "host planning"
  # (its log lines go to stdout too: keep the JSON only)
  "$bench/bench_sampler" --benchmark_filter=BM_PlanPass --benchmark_format=json \
    | grep -v '^\[20' > "$tmp/plan.json"
  log "MPI shared-memory link (2 ranks)"
  mpirun --oversubscribe -np 2 "$bench/bench_comm" > "$tmp/comm.jsonl"
  local commit
  commit=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
  python3 - "$tmp" "$PROFILE" "$THREADS" "$commit" "$(hostname)" << 'EOF'
import json, sys, datetime
tmp, out, threads, commit, host = sys.argv[1:6]
def runs(name):
    return [b for b in json.load(open(f"{tmp}/{name}.json"))["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
gemm = [b["flops"] for b in runs("gemm")]
gflops = len(gemm) / sum(1.0 / r for r in gemm) / 1e9
mem = {b["name"].split("/")[0]: b for b in runs("memory")}
copy_gbs = mem["BM_Copy"]["bytes"] / 1e9
op_us = mem["BM_SmallOp"]["real_time"] / 1e3  # ns -> us
plan = runs("plan")[0]["planned/s"]
comm = [json.loads(l) for l in open(f"{tmp}/comm.jsonl") if l.startswith("{")]
def link(kind, factor):
    rows = {r["bytes"]: r["seconds"] for r in comm if r["collective"] == kind}
    small = min(rows); big = min(b for b in rows if b >= 1 << 20)
    lat = rows[small]
    return rows[big] and (big * factor / max(rows[big] - lat, 1e-12) / 1e9), lat * 1e6
p = 2
ar_bw, ar_lat = link("all_reduce", 2 * (p - 1) / p)
ag_bw, ag_lat = link("all_gather_v", (p - 1) / p)
when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
text = f"""# This machine, one device = one rank of {threads} CPU thread(s). Measured by
# benchmarks/calibrate.sh on {host}, {when}, commit {commit}; nothing here is a
# spec sheet's number. Re-run the script to recalibrate (timings taken while the machine is
# busy are noisy).
name: cpu-here
description: "this machine's CPU, {threads} thread(s) per rank, MPI over shared memory"
calibrated: "{when}, commit {commit}, host {host}"
# bench_gemm: f32 GEMMs at TGN's shapes (1800x100x372, 20000x300x200 forward; the weight
# gradients incl. 18000-deep), harmonic mean of the rates.
gemm_gflop_s: {gflops:.3f}
# bench_memory BM_Copy: 64 MiB copied, bytes read + written per second.
memory_gb_s: {copy_gbs:.3f}
# bench_memory BM_SmallOp: one op call on 16 floats (the CPU's "launch").
op_launch_us: {op_us:.4f}
# bench_sampler BM_PlanPass: the sample stage (negatives, plan, staged inputs) over WIKI
# (600 events, 1 negative, 10 recent neighbours), roots + slots per second, one thread.
host_plan_per_s: {plan:.0f}
# The host is the device: staged inputs are not copied.
host_to_device_gb_s: 0
# bench_comm, mpirun -np 2: latency = one 8-byte call; bandwidth = the 1 MiB call's bytes
# x 2(P-1)/P (all-reduce) or (P-1)/P (all-gather-v) over its time less the latency.
# Two ranks cannot separate a per-step latency from the per-call one: hop latency 0.
all_reduce:
  bandwidth_gb_s: {ar_bw:.3f}
  latency_us: {ar_lat:.3f}
  hop_latency_us: 0
all_gather:
  bandwidth_gb_s: {ag_bw:.3f}
  latency_us: {ag_lat:.3f}
  hop_latency_us: 0
"""
open(out, "w").write(text)
print(text)
EOF
  log "wrote $PROFILE"
}

# One held-out run: trains one epoch, then the plan of the same config on the profile.
check_run() {
  local name=$1 ranks=$2
  shift 2
  local sets=(--config configs/tgn-wiki.yaml --threads "$THREADS" --set train.epoch=1
    --set data.max_events="$MAX_EVENTS" --set run.progress=false "$@")
  log "training $name (ranks $ranks)"
  "$train" "${sets[@]}" --ranks "$ranks" --out "$RUNS/$name" > "$RUNS/$name.log" 2>&1
  "$train" "${sets[@]}" --ranks "$ranks" --plan --profile "$PROFILE" 2> "$RUNS/$name.plan.log" \
    | grep '^{"plan"' > "$RUNS/$name.plan.json"
}

check() {
  mkdir -p "$RUNS"
  local load_before
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  check_run single 1
  check_run strict2 2
  python3 - "$RUNS" "$load_before" "$(getconf _NPROCESSORS_ONLN)" << 'EOF'
import json, sys
runs, load_before, cores = sys.argv[1], sys.argv[2], sys.argv[3]
load_after = open("/proc/loadavg").read().split()[0]
# Other processes take the cores the ranks assume they own: say how busy the machine was.
print(f"load average {load_before} before, {load_after} after the runs, on {cores} cores")
worst = 0.0
for name in ("single", "strict2"):
    m = [json.loads(l) for l in open(f"{runs}/{name}/metrics.jsonl") if '"stage_s"' in l][0]
    plan = json.load(open(f"{runs}/{name}.plan.json"))["plan"]
    model = plan["model"]
    meas, pred = m["train_seconds"], model["epoch_seconds"]["serial"]
    err = (pred - meas) / meas
    worst = max(worst, abs(err))
    print(f"{name}: measured {meas:.2f} s, modelled {pred:.2f} s (serial; pipelined "
          f"{model['epoch_seconds']['pipelined']:.2f} s), error {100 * err:+.1f}%")
    for st, s in m["stage_s"].items():
        if st == "evaluation":
            continue
        mod = model["stages"].get(st, 0.0)
        e = f"{100 * (mod - s) / s:+.0f}%" if s > 0.01 else "-"
        print(f"  {st:14s} measured {s:8.3f} s  modelled {mod:8.3f} s  {e}")
    print(f"  GFLOP/s achieved {plan['flops']['total'] / meas / 1e9:.2f}")
print(f"worst epoch error {100 * worst:.1f}% ({'within' if worst <= 0.25 else 'OUTSIDE'} 25%)")
EOF
}

[[ $mode != --check-only ]] && calibrate
[[ $mode != calibrate ]] && check
exit 0

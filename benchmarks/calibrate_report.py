"""calibrate.sh's arithmetic. `profile`: the micro-benchmarks' output (gemm.json,
memory.json and plan.json from Google Benchmark, comm.jsonl from bench_comm) and the warm
training runs (curve/MODEL-bBATCH/metrics.jsonl) into the cpu-here device profile, written
and printed. `roofline`: a copy of a profile without its step curves. `check`: the held-out
training runs' measured epoch and stage seconds against the profile's modelled ones (and
the roofline's epoch), printed.

    calibrate_report.py profile BENCH_DIR OUT THREADS COMMIT HOST EVENTS
    calibrate_report.py roofline PROFILE OUT
    calibrate_report.py check RUNS LOAD_BEFORE CORES BATCH [BATCH ...]
"""
import datetime
import json
import os
import re
import sys

from gpu_bench import warm_epoch
from gpu_bench_profile import step_curves_yaml, without_curves

RANKS = 2  # bench_comm runs under mpirun -np 2
CHECK_RUNS = ("single", "strict2")  # calibrate.sh's check_run names, one per batch
TOLERANCE = 0.20  # the check passes when every epoch is within 20%

PROFILE = """# This machine, one device = one rank of {threads} CPU thread(s). Measured by
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
# One thread: a pipelined CPU rank plans ahead on its side thread with one (BM_PlanPass/
# threads:0 gives the rate of the whole team, which a GPU run plans with inline).
host_threads: 1
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

CURVES = """# Warm training steps: depbloom-train over the first {events} WIKI events, two epochs, the
# second's median step wall time (the device lane of a step at that batch per rank; the
# model interpolates in the batch and prices the other batches' steps from it).
"""


def read_json(path):
    with open(path) as f:
        return json.load(f)


def iterations(path):
    """A Google Benchmark JSON file's iteration runs (not its aggregates)."""
    return [b for b in read_json(path)["benchmarks"]
            if b.get("run_type", "iteration") == "iteration"]


def link(comm, kind, factor):
    """(bandwidth GB/s, latency us) of one collective from bench_comm's lines: latency =
    the smallest call's time, bandwidth = the first call of at least 1 MiB's bytes x
    factor over its time less the latency."""
    rows = {r["bytes"]: r["seconds"] for r in comm if r["collective"] == kind}
    small = min(rows)
    big = min(b for b in rows if b >= 1 << 20)
    lat = rows[small]
    return rows[big] and (big * factor / max(rows[big] - lat, 1e-12) / 1e9), lat * 1e6


def measured(bench_dir):
    """The profile's measured values from the micro-benchmarks' output in bench_dir."""
    gemm = [b["flops"] for b in iterations(f"{bench_dir}/gemm.json")]
    mem = {b["name"].split("/")[0]: b for b in iterations(f"{bench_dir}/memory.json")}
    with open(f"{bench_dir}/comm.jsonl") as f:
        comm = [json.loads(l) for l in f if l.startswith("{")]
    p = RANKS
    v = {"gflops": len(gemm) / sum(1.0 / r for r in gemm) / 1e9,
         "copy_gbs": mem["BM_Copy"]["bytes"] / 1e9,
         "op_us": mem["BM_SmallOp"]["real_time"] / 1e3,  # ns -> us
         "plan": iterations(f"{bench_dir}/plan.json")[0]["planned/s"]}
    v["ar_bw"], v["ar_lat"] = link(comm, "all_reduce", 2 * (p - 1) / p)
    v["ag_bw"], v["ag_lat"] = link(comm, "all_gather_v", (p - 1) / p)
    return v


def step_curves(bench_dir):
    """model -> [(batch, seconds)], batches increasing: each curve run's last (warm) epoch's
    median step, from BENCH_DIR/curve/MODEL-bBATCH/metrics.jsonl."""
    out = {}
    folder = os.path.join(bench_dir, "curve")
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        found = re.fullmatch(r"(\w+)-b(\d+)", name)
        if found:
            median = warm_epoch(os.path.join(folder, name))["step_s"]["median"]
            out.setdefault(found[1], []).append((int(found[2]), median))
    return {m: sorted(points) for m, points in out.items()}


def curves_text(curves, events):
    return CURVES.format(events=events) + step_curves_yaml(curves) if curves else ""


def profile(bench_dir, out, threads, commit, host, events):
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = PROFILE.format(threads=threads, host=host, when=when, commit=commit,
                          **measured(bench_dir))
    text += curves_text(step_curves(bench_dir), events)
    with open(out, "w") as f:
        f.write(text)
    print(text)


def check_run(runs, name):
    """One held-out run's lines: measured against modelled epoch and stages; its error, and
    its table row (measured, modelled and the roofline alone, seconds and errors)."""
    with open(f"{runs}/{name}/metrics.jsonl") as f:
        epochs = [json.loads(l) for l in f if '"stage_s"' in l]
    m = epochs[-1]  # warm: the model prices an epoch whose buffers are in place
    plan = read_json(f"{runs}/{name}.plan.json")["plan"]
    model = plan["model"]
    meas, pred = m["train_seconds"], model["epoch_seconds"]["serial"]
    err = (pred - meas) / meas
    lines = [f"{name}: measured {meas:.2f} s (epoch {m['epoch']}; the first, cold, "
             f"{epochs[0]['train_seconds']:.2f} s), modelled {pred:.2f} s (serial; pipelined "
             f"{model['epoch_seconds']['pipelined']:.2f} s), error {100 * err:+.1f}%"]
    row = f"| {name} | {meas:.2f} | {pred:.2f} | {100 * err:+.1f}% |"
    if os.path.exists(f"{runs}/{name}.roofline.json"):
        roof = read_json(f"{runs}/{name}.roofline.json")["plan"]["model"]["epoch_seconds"]
        roof_err = (roof["serial"] - meas) / meas
        lines.append(f"  roofline alone {roof['serial']:.2f} s, error {100 * roof_err:+.1f}%")
        row += f" {roof['serial']:.2f} | {100 * roof_err:+.1f}% |"
    for st, s in m["stage_s"].items():
        if st == "evaluation":
            continue
        mod = model["stages"].get(st, 0.0)
        e = f"{100 * (mod - s) / s:+.0f}%" if s > 0.01 else "-"
        lines.append(f"  {st:14s} measured {s:8.3f} s  modelled {mod:8.3f} s  {e}")
    lines.append(f"  GFLOP/s achieved {plan['flops']['total'] / meas / 1e9:.2f}")
    return lines, err, row


def check(runs, load_before, cores, *batches):
    with open("/proc/loadavg") as f:
        load_after = f.read().split()[0]
    # Other processes take the cores the ranks assume they own: say how busy the machine was.
    print(f"load average {load_before} before, {load_after} after the runs, on {cores} cores")
    worst, rows = 0.0, []
    for batch in batches:
        for name in CHECK_RUNS:
            lines, err, row = check_run(runs, f"{name}-b{batch}")
            worst = max(worst, abs(err))
            rows.append(row)
            print("\n".join(lines))
    print("| run | measured s | modelled s | error | roofline alone s | error |\n"
          "|---|---|---|---|---|---|\n" + "\n".join(rows))
    print(f"worst epoch error {100 * worst:.1f}% "
          f"({'within' if worst <= TOLERANCE else 'OUTSIDE'} {100 * TOLERANCE:.0f}%)")


def main(argv):
    if argv[:1] == ["profile"] and len(argv) == 7:
        profile(*argv[1:])
    elif argv[:1] == ["roofline"] and len(argv) == 3:
        without_curves(*argv[1:])
    elif argv[:1] == ["check"] and len(argv) >= 5:
        check(*argv[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

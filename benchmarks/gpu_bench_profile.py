"""gpu-bench.sh's device profile: what benchmarks/gpu_bench.py measured (its bench.json)
into configs/devices/<gpu>-measured.yaml. Each key's comment names the benchmark, the device,
the date and the commit; the collectives, which one device cannot measure, are cited from
NCCL's tuning table. The training runs become `step_curves` (the WIKI models' median step
at each batch, pipeline on, TF32 off, no refinement) and comment lines (every configuration).

    gpu_bench_profile.py BENCH_JSON OUT_YAML
"""
import json
import os
import sys

# NCCL's ring model, src/graph/tuning.cc at NVIDIA/nccl commit 01afd20 (the version the
# shipped GPU profiles cite): base latency (Ring: Simple 8.4 us, LL 3.6 us), NVLink hop
# latency (Simple 3.4 us, LL 0.47 us), LL's share of the bus bandwidth on one node.
NCCL = "NCCL's tuning model, src/graph/tuning.cc at NVIDIA/nccl commit 01afd20"
NVLINK_BUS_GB_S = 450  # H100 and H200 SXM: NVLink 4, 900 GB/s both ways per GPU
LINKS = {"all_reduce": 0.25, "all_gather": 0.3333}  # LL's bandwidth share


class Missing(Exception):
    """A key the profile needs was not measured (a run cut off or a benchmark failed)."""


def micro(bench, program):
    """The benchmark entries (iterations, not aggregates) of one micro-benchmark record."""
    for r in bench["records"]:
        if r.get("program") == program and r.get("rc") == 0:
            return [b for b in r.get("benchmarks", [])
                    if b.get("run_type", "iteration") == "iteration"]
    return []


def entry(entries, prefix, what):
    """The first entry whose name starts with prefix; Missing naming `what` when none."""
    for b in entries:
        if b["name"].startswith(prefix):
            return b
    raise Missing(what)


def harmonic_gflops(entries, names, tf32):
    """Harmonic mean in GFLOP/s of the `flops` rates of the GEMM cases named `names` (and on
    the GPU, of the TF32 setting asked for)."""
    rates = [b["flops"] for b in entries if b["name"].split("/")[0] in names
             and ("/tf32:" not in b["name"] or f"/tf32:{int(tf32)}" in b["name"])]
    if not rates:
        raise Missing(f"GEMM rate ({'TF32' if tf32 else 'f32'})")
    return len(rates) / sum(1.0 / r for r in rates) / 1e9


def per_call_us(b):
    """Microseconds per call of a case that counts its calls as items."""
    return 1e6 / b["items_per_second"]


def measured(bench):
    """(key -> value, key -> comment) of the measured keys; Missing when one is absent."""
    cuda = bench["device"] == "cuda"
    gemm, memory, plan = micro(bench, "bench_gemm"), micro(bench, "bench_memory"), \
        micro(bench, "bench_sampler")
    names = ("BM_GemmCuda", "BM_GemmWeightGradCuda") if cuda else \
        ("BM_Gemm<float>", "BM_GemmWeightGrad<float>")
    v, c = {}, {}
    v["gemm_gflop_s"] = harmonic_gflops(gemm, names, False)
    c["gemm_gflop_s"] = (f"bench_gemm {names[0]}, {names[1]}: f32 at TGN's shapes, harmonic "
                         "mean of the rates (TF32 off, as the trainer runs by default)")
    if cuda:
        tf32 = harmonic_gflops(gemm, names, True)
        c["gemm_gflop_s"] += f"; with TF32 on (run.tf32): {tf32:.0f} GFLOP/s"
        v["memory_gb_s"] = entry(memory, "BM_CopyCuda", "GPU copy")["bytes"] / 1e9
        c["memory_gb_s"] = "bench_memory BM_CopyCuda: 64 MiB copied on the GPU, read + write"
        v["op_launch_us"] = per_call_us(entry(memory, "BM_SmallOpCuda", "kernel launch"))
        c["op_launch_us"] = ("bench_memory BM_SmallOpCuda: one ops::fill of 16 floats, 1,000 "
                             "back to back, then one wait")
        small = entry(memory, "BM_UploadCuda/bytes:4096", "small upload")
        v["upload_latency_us"] = per_call_us(small)
        c["upload_latency_us"] = ("bench_memory BM_UploadCuda/bytes:4096: one 4 KiB upload "
                                  "from pinned staging memory, back to back")
        big = entry(memory, "BM_UploadCuda/bytes:16777216", "large upload")
        v["host_to_device_gb_s"] = big["bytes_per_second"] / 1e9
        c["host_to_device_gb_s"] = "bench_memory BM_UploadCuda/bytes:16777216 (pinned, 16 MiB)"
    else:
        v["memory_gb_s"] = entry(memory, "BM_Copy/", "host copy")["bytes"] / 1e9
        c["memory_gb_s"] = "bench_memory BM_Copy: 64 MiB copied, read + write"
        v["op_launch_us"] = entry(memory, "BM_SmallOp", "op call")["real_time"] / 1e3
        c["op_launch_us"] = "bench_memory BM_SmallOp: one op call on 16 floats (ns -> us)"
        v["host_to_device_gb_s"] = 0
        c["host_to_device_gb_s"] = "the host is the device: staged inputs are not copied"
    one = entry(plan, "BM_PlanPass/threads:1", "plan rate, 1 thread")["planned/s"]
    team = entry(plan, "BM_PlanPass/threads:0", "plan rate, all cores")
    v["host_plan_per_s"] = one
    c["host_plan_per_s"] = ("bench_sampler BM_PlanPass/threads:1: the sample stage over WIKI, "
                            "roots + slots per second, one core")
    gain = team["planned/s"] / one
    # A GPU rank plans inline with the OpenMP team: its measured gain, in whole cores. A
    # pipelined CPU rank plans ahead on its side thread with one.
    v["host_threads"] = max(1, round(gain)) if cuda else 1
    c["host_threads"] = (f"BM_PlanPass/threads:0 ({team.get('threads', 0):.0f} cores) plans "
                         f"{team['planned/s']:.0f}/s, {gain:.2f} x one core"
                         + ("; rounded to whole cores" if cuda
                            else "; a pipelined CPU rank plans on one side thread"))
    return v, c


def step_curves(bench):
    """model -> [(batch, median step seconds)] of the WIKI runs with the pipeline on, TF32
    off and no refinement, batches increasing."""
    out = {}
    for r in bench["records"]:
        cfg = r.get("config")
        if r.get("rc") != 0 or not cfg or cfg["data"] != "wiki":
            continue
        if not cfg["pipeline"] or cfg["tf32"] or cfg["refine"] > 1:
            continue
        median = r.get("step_s", {}).get("median", 0)
        if median > 0:
            out.setdefault(cfg["model"], []).append((cfg["batch"], median))
    return {m: sorted(points) for m, points in out.items()}


def step_curves_yaml(curves):
    """A profile's `step_curves` block: model -> [(batch, seconds)], models sorted."""
    return "step_curves:\n" + "".join(
        f"  {model}:\n" + "".join(f"    - {{batch: {b}, device_seconds: {t:.6g}}}\n"
                                  for b, t in points)
        for model, points in sorted(curves.items()))


def without_curves(profile_path, out):
    """The profile without its step curves (its roofline alone): drops the step_curves block
    and the comment lines just above it."""
    with open(profile_path) as f:
        lines = f.read().splitlines(keepends=True)
    kept, comments, skipping = [], [], False
    for line in lines:
        if line.startswith("step_curves:"):
            skipping, comments = True, []
            continue
        if skipping and (line.startswith(" ") or not line.strip()):
            continue
        skipping = False
        if line.startswith("#"):
            comments.append(line)
        else:
            kept += comments + [line]
            comments = []
    with open(out, "w") as f:
        f.write("".join(kept + comments))


def run_line(r):
    """One comment line on a training configuration's result."""
    cfg, name = r.get("config"), r["name"]
    if r.get("rc") != 0:
        return f"{name}: not measured ({r.get('why', 'exit code %s' % r.get('rc'))})"
    s, calls, peak = r["step_s"], r.get("calls", {}), r.get("peak_bytes", {})
    stages = r.get("stage_s_per_step", {})
    busiest = ", ".join(f"{k} {1e3 * v:.2f}" for k, v in
                        sorted(stages.items(), key=lambda kv: -kv[1])[:3])
    return (f"{name}: step {1e3 * s['median']:.3f} ms (p10 {1e3 * s['p10']:.3f}, p90 "
            f"{1e3 * s['p90']:.3f}, {s['steps']} steps, batch {cfg['batch']}); op calls "
            f"{calls.get('op_calls_per_step', 0):.0f}, uploads "
            f"{calls.get('uploads_per_step', 0):.0f}, host waits "
            f"{r.get('host_waits_per_step', 0):.2f} per step; peak device "
            f"{peak.get('device', 0) / 2**20:.0f} MiB, host {peak.get('host', 0) / 2**20:.0f} "
            "MiB; host ms/step: "
            f"{busiest}")


def comment(text, width=92):
    """`text` as YAML comment lines of at most `width` characters."""
    lines, line = [], "#"
    for word in text.split():
        if len(line) + 1 + len(word) > width and line != "#":
            lines.append(line)
            line = "#"
        line += " " + word
    lines.append(line)
    return "\n".join(lines) + "\n"


def profile_text(bench):
    """The profile's YAML; Missing when a needed key was not measured."""
    v, c = measured(bench)
    cuda = bench["device"] == "cuda"
    name = bench["profile_name"]
    tag = f"[{bench['gpu']}, {bench['date']}, commit {bench['commit']}]"
    text = comment(f"Written by tools/gpu-bench.sh on {bench['gpu']} ({bench['device_name']}), "
                   f"{bench['date']}, commit {bench['commit']}: every number measured there "
                   "unless its comment cites a source. The step curves are the median "
                   "wall time of a warm training step (the second epoch's; "
                   "benchmarks/gpu_bench.py), pipeline on, TF32 off.")
    text += f"name: {name}\n"
    text += f'description: "{bench["device_name"]}, measured by tools/gpu-bench.sh"\n'
    text += f'calibrated: "{bench["date"]}, commit {bench["commit"]}, {bench["gpu"]}"\n'
    formats = {"gemm_gflop_s": "{:.1f}", "memory_gb_s": "{:.2f}", "op_launch_us": "{:.4f}",
               "upload_latency_us": "{:.4f}", "host_to_device_gb_s": "{:.3f}",
               "host_plan_per_s": "{:.0f}", "host_threads": "{}"}
    for key, fmt in formats.items():
        if key in v:
            text += comment(f"{tag} {c[key]}.") + f"{key}: {fmt.format(v[key])}\n"
    where = "" if cuda else (" (--device cpu: a check of the code path; these are the GPU's "
                             "cited numbers, not this machine's)")
    for link, share in LINKS.items():
        text += comment(f"[{NCCL}] not measurable on one device: NVLink 4 bus bandwidth "
                        f"{NVLINK_BUS_GB_S} GB/s, Ring/Simple 8.4 us + 3.4 us per NVLink "
                        f"step, Ring/LL 3.6 us + 0.47 us per step at {share} of the "
                        f"bandwidth{where}.")
        text += (f"{link}:\n  bandwidth_gb_s: {NVLINK_BUS_GB_S}\n  latency_us: 8.4\n"
                 f"  hop_latency_us: 3.4\n  ll_latency_us: 3.6\n  ll_hop_latency_us: 0.47\n"
                 f"  ll_bandwidth_share: {share}\n")
    curves = step_curves(bench)
    if curves:
        text += comment(f"{tag} median training step over WIKI per batch (events per rank), "
                        "pipeline on, TF32 off, no refinement: the step's wall time, start "
                        "to the next step's start, which once warm is the device's share "
                        "(an upper bound on gather..optimise: it holds the write-back's "
                        "device work and any host time the pipeline did not hide).")
        text += step_curves_yaml(curves)
    runs = [r for r in bench["records"] if r.get("config")]
    if runs:
        text += comment(f"{tag} every training configuration (stage times are the host's):")
        text += "".join(comment(run_line(r)) for r in runs)
    return text


def write_profile(bench, path):
    """Writes the profile to path (through a temporary name); returns what is missing
    instead when a needed key was not measured."""
    try:
        text = profile_text(bench)
    except Missing as e:
        return str(e)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return None


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    with open(argv[0]) as f:
        bench = json.load(f)
    missing = write_profile(bench, argv[1])
    if missing:
        sys.exit(f"{argv[0]}: no profile written, not measured: {missing}")


if __name__ == "__main__":
    main(sys.argv[1:])

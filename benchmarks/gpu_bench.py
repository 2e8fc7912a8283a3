"""tools/gpu-bench.sh's loop: the micro-benchmarks, then the training configurations, in a
fixed order, one process each, within a time budget. After each configuration bench.json is
rewritten (through a temporary name) and so is the device profile, as far as it can be
written, so a run cut off at any point still returns what it measured.

    gpu_bench.py --device {cuda,cpu} --bin DIR --out DIR --data DIR --profile FILE
                 [--budget-s S] [--gpu NAME] [--device-name TEXT] [--commit C] [--threads N]

A training configuration runs depbloom-train for two epochs of at most `max_batches` steps
and reads the second (warm) epoch's line of metrics.jsonl: `step_s` (the median, p10 and p90
of the steps' wall times), `stage_s` (the host's seconds per stage), `calls` (op calls and
uploads per step), `host_waits_per_step` and `peak_bytes` (the process's Buffers).

Estimated time per configuration on one H100 (from TGN WIKI's 0.38 s epoch of 136 steps on
an H200 at batch 600 and a process start of about 3 s: loading WIKI, CUDA's context): WIKI
5-8 s each, the REDDIT shape 8-15 s each (its data made once on the device: 27 s and 479 MB
on a busy 2-core machine), the micro-benchmarks about 40 s in all: about 6 minutes for the
44 items below (3 micro-benchmarks, 40 training configurations, the REDDIT-shaped data).
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

import gpu_bench_profile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Sizes per device: the GPU's are issue 32's; the CPU's run the same loop within a minute.
SIZES = {
    "cuda": {"batches": [600, 1200, 2400, 4800, 9600], "extras_at": [600, 4800], "unit": 600,
             "models": ["tgn", "jodie", "apan"], "max_batches": 40, "max_events": 0,
             "reddit_scale": 1, "reddit_events": 0, "limit_s": 45, "min_time": 0.2},
    "cpu": {"batches": [100, 150, 200], "extras_at": [200], "unit": 100,
            "models": ["tgn", "jodie"],
            "max_batches": 3, "max_events": 2000, "reddit_scale": 0.01, "reddit_events": 2000,
            "limit_s": 20, "min_time": 0.01},
}
MAX_REFINE = 8  # refinement at m = batch / unit, up to 8
MICRO = {  # program -> --benchmark_filter per device
    "bench_memory": {"cuda": "^BM_(CopyCuda|SmallOpCuda|UploadCuda)", "cpu": "^BM_(Copy|SmallOp)/"},
    "bench_gemm": {"cuda": "^BM_(Gemm|GemmWeightGrad)Cuda/",
                   "cpu": "^BM_(Gemm|GemmWeightGrad)<float>/"},
    "bench_sampler": {"cuda": "^BM_PlanPass/", "cpu": "^BM_PlanPass/"},
}


def train_config(model, data, batch, pipeline=True, refine=1, tf32=False):
    name = f"{model}-{data}-b{batch}" + ("" if pipeline else "-nopipe") + \
        (f"-refine{refine}" if refine > 1 else "") + ("-tf32" if tf32 else "")
    return {"name": name, "config": {"model": model, "data": data, "batch": batch,
                                     "pipeline": pipeline, "refine": refine, "tf32": tf32}}


def plan(device):
    """The configurations in their fixed order: micro-benchmarks, the step curves (WIKI, then
    the REDDIT shape), then the variants at the `extras_at` batches."""
    s = SIZES[device]
    out = [{"name": p, "program": p} for p in MICRO]
    out += [train_config(m, "wiki", b) for m in s["models"] for b in s["batches"]]
    out.append({"name": "reddit-synth", "synth": s["reddit_scale"]})
    out += [train_config("tgn", "reddit", b) for b in s["batches"]]
    for model, data in [(m, "wiki") for m in s["models"]] + [("tgn", "reddit")]:
        for b in s["extras_at"]:
            out.append(train_config(model, data, b, pipeline=False))
            m = min(MAX_REFINE, b // s["unit"])
            if m > 1:
                out.append(train_config(model, data, b, refine=m))
            out.append(train_config(model, data, b, tf32=True))
    return out


def reddit_dir(data, scale):
    return os.path.join(data, f"reddit-s{scale}-f172")


def train_argv(a, cfg, run_dir):
    """depbloom-train's command line for one training configuration."""
    s = SIZES[a.device]
    config = f"configs/{cfg['model']}-{'wiki' if cfg['data'] == 'wiki' else 'synth-reddit'}.yaml"
    argv = [os.path.join(a.bin, "depbloom-train"), "--config", config, "--device",
            "cuda:0" if a.device == "cuda" else "cpu", "--out", run_dir]
    sets = {"train.epoch": 2, "train.batch_size": cfg["batch"],
            "run.max_batches": s["max_batches"], "run.progress": "false",
            "run.checkpoint": "false", "pipeline.enabled": str(cfg["pipeline"]).lower(),
            "run.tf32": str(cfg["tf32"]).lower(), "refine.micro_batches": cfg["refine"],
            "eval.batch_size": max(s["batches"])}
    events = s["max_events"] if cfg["data"] == "wiki" else s["reddit_events"]
    if events:
        sets["data.max_events"] = events
    if cfg["data"] == "reddit":
        sets["data.path"] = reddit_dir(a.data, s["reddit_scale"])
    if a.threads:
        argv += ["--threads", str(a.threads)]
    for k, v in sets.items():
        argv += ["--set", f"{k}={v}"]
    return argv


def warm_epoch(run_dir):
    """The last epoch line of a run's metrics.jsonl (None when it wrote none)."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        epochs = [json.loads(line) for line in f if '"stage_s"' in line]
    return epochs[-1] if epochs else None


def summarise_run(epoch):
    """What bench.json keeps of a warm epoch's line."""
    steps = max(epoch["step_s"]["steps"], 1)
    return {"step_s": epoch["step_s"], "epoch": epoch["epoch"],
            "train_seconds": epoch["train_seconds"], "calls": epoch["calls"],
            "host_waits_per_step": epoch["host_waits_per_step"],
            "peak_bytes": epoch["peak_bytes"],
            "stage_s_per_step": {k: v / steps for k, v in epoch["stage_s"].items()
                                 if k != "evaluation"}}


def run_one(a, item, limit, log):
    """Runs one configuration within `limit` seconds; returns its record."""
    rec = dict(item)
    if "program" in item:
        out = os.path.join(a.work, item["name"] + ".json")
        argv = [os.path.join(a.bin, item["program"]),
                f"--benchmark_filter={MICRO[item['program']][a.device]}",
                f"--benchmark_min_time={SIZES[a.device]['min_time']}",
                f"--benchmark_out={out}", "--benchmark_out_format=json"]
    elif "synth" in item:
        out = reddit_dir(a.data, item["synth"])
        argv = [os.path.join(a.bin, "depbloom-data"), "synth", "--like", "reddit", "--scale",
                str(item["synth"]), "--seed", "0", "-o", out]
    else:
        out = os.path.join(a.work, "runs", item["name"])
        shutil.rmtree(out, ignore_errors=True)
        argv = train_argv(a, item["config"], out)
        rec["argv"] = argv[1:]  # gpu_bench_check.py plans the same run
    t0 = time.time()
    try:
        rec["rc"] = subprocess.run(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                   timeout=limit).returncode
    except subprocess.TimeoutExpired:
        rec["rc"], rec["why"] = 124, f"time limit {limit:.0f} s"
    rec["seconds"] = round(time.time() - t0, 2)
    if rec["rc"] != 0:
        rec.setdefault("why", f"exit code {rec['rc']}")
        return rec
    try:
        rec.update(read_result(item, out))
    except (OSError, ValueError, KeyError) as e:
        # A program older than this script (a kit made before step_s) or a torn file: the
        # loop goes on with the next configuration.
        rec["rc"], rec["why"] = 4, f"unreadable result {out}: {e!r}"
    return rec


def read_result(item, out):
    """What one configuration's output holds for bench.json."""
    if "program" in item:
        with open(out) as f:
            return {"benchmarks": json.load(f)["benchmarks"]}
    if "synth" in item:
        return {"bytes": sum(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out))}
    epoch = warm_epoch(out)
    if epoch is None:
        raise ValueError("no epoch line in metrics.jsonl")
    return summarise_run(epoch)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=sorted(SIZES), required=True)
    p.add_argument("--bin", required=True, help="folder with the programs")
    p.add_argument("--out", required=True, help="folder for bench.json, bench.log, runs")
    p.add_argument("--data", required=True, help="folder for the REDDIT-shaped data")
    p.add_argument("--profile", required=True, help="the device profile to write")
    p.add_argument("--budget-s", type=float, default=480)
    p.add_argument("--gpu", default="cpu", help="h100, h200 or another short name")
    p.add_argument("--device-name", default="this machine's CPU")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--threads", type=int, default=0, help="depbloom-train --threads (0: all)")
    a = p.parse_args(argv)
    a.work, a.data = os.path.abspath(a.out), os.path.abspath(a.data)
    os.makedirs(a.work, exist_ok=True)
    start = time.time()
    bench = {"device": a.device, "gpu": a.gpu, "device_name": a.device_name,
             "commit": a.commit, "profile_name": os.path.splitext(os.path.basename(a.profile))[0],
             "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
             "budget_s": a.budget_s, "records": []}
    json_path = os.path.join(a.work, "bench.json")
    with open(os.path.join(a.work, "bench.log"), "a") as log:
        for item in plan(a.device):
            left = a.budget_s - (time.time() - start)
            if left < 10:
                rec = dict(item, rc=None, why="budget spent")
            elif item.get("config", {}).get("data") == "reddit" and not any(
                    r.get("synth") and r["rc"] == 0 for r in bench["records"]):
                rec = dict(item, rc=None, why="no REDDIT-shaped data")
            else:
                log.write(f"== {item['name']}\n")
                log.flush()
                limit = min(left, SIZES[a.device]["limit_s"] * (3 if "synth" in item else 1))
                rec = run_one(a, item, limit, log)
            bench["records"].append(rec)
            bench["elapsed_s"] = round(time.time() - start, 1)
            bench["profile_missing"] = gpu_bench_profile.write_profile(bench, a.profile)
            write_json(json_path, bench)
            print(f"{rec['name']}: rc={rec['rc']}" + (f" ({rec['why']})" if rec.get("why") else "")
                  + (f" in {rec['seconds']} s" if "seconds" in rec else ""), flush=True)
    if bench["profile_missing"]:
        print(f"no profile written, not measured: {bench['profile_missing']}")
        return 1
    print(f"wrote {a.profile} and {json_path} in {bench['elapsed_s']} s")
    return 0 if all(r["rc"] == 0 for r in bench["records"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

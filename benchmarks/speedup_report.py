"""speedup.sh's arithmetic. `estimate`: a run's memory in GiB, before it starts, from the
plan of one rank's share (run_memory.py).
`summarise`: the run folders of a manifest into speedup.json, .csv and .md (the time to
single-device accuracy first, time_to_target.py; then epoch times and traffic), then every
row checked against its run's metrics.jsonl and plan; exit 1 on a mismatch or a failed run.
`check`: that check again on written files."""
import argparse
import csv
import hashlib
import json
import math
import os
import re
import statistics
import sys

import time_to_target
from run_memory import estimate_gib
from bench_metrics import (COLLECTIVE_KINDS as KINDS, cpu_model, fixed, known_mean, run_device,
                           run_metrics, utc_now, write_json)

CONFIGS = time_to_target.HEADLINE
DATASETS = ("wiki", "reddit", "wikitalk")


# --- summarise --------------------------------------------------------------------------

def json_line(path, key):
    """The first line of `path` that is a JSON object holding `key`, or None."""
    if not os.path.exists(path):
        return None
    for line in open(path):
        if line.startswith("{"):
            obj = json.loads(line)
            if key in obj:
                return obj[key]
    return None


def config_hash(run):
    """sha256 of the run's config.yaml without its run folder (the same settings, the same hash)."""
    path = os.path.join(run, "config.yaml")
    if not os.path.exists(path):
        return None
    text = "".join(l for l in open(path) if not re.match(r"\s*out:", l))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def comm_totals(comm):
    return {"collectives": sum((comm.get(k) or {}).get("calls", 0) for k in KINDS),
            "bytes": sum((comm.get(k) or {}).get("bytes", 0) for k in KINDS),
            "exchange_bytes": comm.get("exchange_bytes", 0)}


def modelled_epoch(path, steps):
    """The cost model's pipelined epoch (every suite configuration runs the pipeline) from a
    `--plan --profile` output."""
    model = (json_line(path, "plan") or {}).get("model")
    if not model:
        return None
    ep = model.get("epoch_seconds") or {}
    return {"profile": model.get("profile"), "epoch_seconds_serial": ep.get("serial"),
            "epoch_seconds_pipelined": ep.get("pipelined"), "epoch_seconds": ep.get("pipelined"),
            "bound": model.get("bound"),
            # the model's stages are seconds per epoch on the critical rank
            "stage_seconds": {k: v / steps for k, v in (model.get("stages") or {}).items()}
            if steps else None}


def curve(ep):
    """Per epoch: validation per-batch AP and the run's totals after it (the totals the
    trainer keeps; summed here from the epoch lines of a build without them)."""
    out, secs, steps = [], 0.0, 0
    for l in ep:
        secs += l["train_seconds"]
        steps += l.get("batches", 0)
        t = l.get("totals") or {"train_seconds": secs, "steps": steps or None}
        out.append({"val_ap": (l.get("val") or {}).get("ap_batch_mean"),
                    "train_seconds": t["train_seconds"], "steps": t.get("steps")})
    return out


def summarise_run(m, cores, peak):
    """One manifest line -> one row."""
    row = {"dataset": m["dataset"], "model": m["model"], "ranks": m["p"], "config": m["config"],
           "seed": m["seed"], "threads_per_rank": m["threads"], "batch_size": m["batch"],
           "oversubscribed": m["p"] > cores, "run_dir": m["dir"], "status": m["status"]}
    plan = json_line(os.path.join(m["dir"], "plan.json"), "plan")
    if plan:
        row["plan"] = {k: plan.get(k) for k in ("strategy", "steps", "events")}
        row["plan"].update((plan.get("comm") or {}).get("plan") or {})
        row["flops_per_epoch"] = (plan.get("flops") or {}).get("total")
        steps = plan.get("steps")
        row["modelled"] = modelled_epoch(os.path.join(m["dir"], "model.json"), steps)
        row["modelled_cpu"] = modelled_epoch(os.path.join(m["dir"], "model-cpu.json"), steps)
    if not m["status"].startswith("exit"):
        return row
    row["exit_code"] = int(m["status"].split()[1])
    row["config_hash"] = config_hash(m["dir"])
    device = run_device(m["dir"])
    if device:
        row["device"] = device[0]
    ep, tests = run_metrics(m["dir"])
    if not ep:
        return row
    mean = lambda f: statistics.fmean(f(l) for l in ep)
    t = tests[-1] if tests else {}
    totals = [comm_totals(l.get("comm") or {}) for l in ep]
    secs = mean(lambda l: l["train_seconds"])
    steps = (plan or {}).get("steps")
    row.update({
        "epochs": len(ep), "final_loss": ep[-1]["loss"], "curve": curve(ep),
        "test_ap_batch_mean": (t.get("test") or {}).get("ap_batch_mean"),
        "test_new_nodes_ap_batch_mean": (t.get("test_new_nodes") or {}).get("ap_batch_mean"),
        "test_ap": (t.get("test") or {}).get("ap"),
        "collectives_per_epoch": statistics.fmean(x["collectives"] for x in totals),
        "bytes_per_epoch": statistics.fmean(x["bytes"] for x in totals),
        "exchange_bytes_per_epoch": statistics.fmean(x["exchange_bytes"] for x in totals),
        "stage_seconds_per_step": {s: mean(lambda l: l["stage_s"].get(s, 0.0)) / steps
                                   for s in ep[0]["stage_s"] if s != "evaluation"} if steps else None,
        # Ranks beyond the cores time-share them: the time is kept, but it is no speed.
        "train_seconds_per_epoch": None if row["oversubscribed"] else secs,
        "events_per_s": None if row["oversubscribed"] else mean(lambda l: l["train_events"]) / secs})
    if row["oversubscribed"]:
        row["oversubscribed_train_seconds_per_epoch"] = secs
    flops, secs_ok = row.get("flops_per_epoch"), row["train_seconds_per_epoch"]
    row["gflops_per_s"] = flops / secs_ok / 1e9 if flops and secs_ok else None
    row["share_of_sgemm_peak"] = row["gflops_per_s"] * 1e9 / peak if row["gflops_per_s"] and peak else None
    return row


def sgemm_peak(gemm_json, root):
    """(FLOP/s, source): the best bench_gemm f32 rate with every core, measured by the suite;
    else configs/devices/cpu-here.yaml's gemm_gflop_s (one thread, at the model's shapes)
    times the cores."""
    if gemm_json and os.path.exists(gemm_json):
        rates = [b.get("flops") for b in json.load(open(gemm_json)).get("benchmarks", [])]
        rates = [r for r in rates if r]
        if rates:
            return max(rates), "bench_gemm BM_Gemm<float>, best shape, every core, this run"
    here = os.path.join(root, "configs", "devices", "cpu-here.yaml")
    if os.path.exists(here):
        m = re.search(r"^gemm_gflop_s:\s*([0-9.eE+]+)", open(here).read(), re.M)
        if m:
            cores = os.cpu_count()
            return float(m.group(1)) * 1e9 * cores, f"configs/devices/cpu-here.yaml gemm_gflop_s x {cores} cores"
    return None, "not measured (no bench_gemm run, no cpu-here.yaml)"


def avg(rows, key):
    return known_mean(r.get(key) for r in rows)


def modelled_avg(rows, key):
    return known_mean((r.get("modelled") or {}).get(key) for r in rows)


def aggregate(rows):
    """Means over seeds per (dataset, model, P, config) and the speed-up over strict at that P."""
    groups = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["model"], r["ranks"], r["config"]), []).append(r)
    out = []
    for (d, mo, p, c), rs in groups.items():
        ran = [r for r in rs if r["status"].startswith("exit")]
        g = {"dataset": d, "model": mo, "ranks": p, "config": c, "seeds": len(ran),
             "status": rs[0]["status"] if not ran else "ran", "oversubscribed": rs[0]["oversubscribed"]}
        for k in ("train_seconds_per_epoch", "events_per_s", "test_ap_batch_mean",
                  "test_new_nodes_ap_batch_mean", "collectives_per_epoch", "bytes_per_epoch",
                  "exchange_bytes_per_epoch", "gflops_per_s", "share_of_sgemm_peak"):
            g[k] = avg(ran, k)
        g["plan"] = next((r["plan"] for r in rs if r.get("plan")), {})
        g["modelled_epoch_seconds"] = modelled_avg(rs, "epoch_seconds")
        g["modelled_bound"] = next(((r.get("modelled") or {}).get("bound") for r in rs
                                    if (r.get("modelled") or {}).get("bound")), None)
        out.append(g)
    base = {(g["dataset"], g["model"], g["ranks"]): g for g in out if g["config"] == "strict"}
    ratio = lambda a, b: a / b if a and b else None
    for g in out:
        s = base.get((g["dataset"], g["model"], g["ranks"]), {})
        g["speedup_vs_strict"] = ratio(s.get("train_seconds_per_epoch"), g["train_seconds_per_epoch"])
        g["modelled_speedup_vs_strict"] = ratio(s.get("modelled_epoch_seconds"), g["modelled_epoch_seconds"])
    position = lambda names, x: names.index(x) if x in names else len(names)
    order = lambda g: (position(DATASETS, g["dataset"]), g["dataset"], g["model"], g["ranks"],
                       position(CONFIGS, g["config"]), g["config"])
    return sorted(out, key=order)


CSV_FIELDS = ("commit", "machine", "config_hash", "dataset", "model", "ranks", "config", "seed",
              "threads_per_rank", "batch_size", "oversubscribed", "status", "epochs",
              "train_seconds_per_epoch", "events_per_s", "test_ap_batch_mean",
              "test_new_nodes_ap_batch_mean", "test_ap", "collectives_per_epoch", "bytes_per_epoch",
              "exchange_bytes_per_epoch", "cut_fraction", "max_imbalance", "migrated_nodes",
              "flops_per_epoch", "gflops_per_s", "share_of_sgemm_peak",
              "modelled_epoch_seconds", "modelled_bound", "target", "epochs_to_target",
              "steps_to_target", "seconds_to_target", "run_dir")


def csv_row(r, head):
    flat = dict(r, commit=head["commit"], machine=head["machine"]["name"])
    flat.update({k: (r.get("plan") or {}).get(k) for k in ("cut_fraction", "max_imbalance", "migrated_nodes")})
    flat["modelled_epoch_seconds"] = (r.get("modelled") or {}).get("epoch_seconds")
    flat["modelled_bound"] = (r.get("modelled") or {}).get("bound")
    return {k: ("" if flat.get(k) is None else repr(flat[k]) if isinstance(flat[k], float) else flat[k])
            for k in CSV_FIELDS}


def markdown(groups, head):
    mb = lambda x: None if x is None else x / 1e6
    prof = head["profile"] if head["modelled"] else "no cost model in this build"
    data = (f"the first {head['max_events']} events of each stream" if head["max_events"] > 0
            else f"WIKI whole, synthetic shapes at scale {head['synth_scale']}")
    lines = [f"Every configuration with the pipeline; batch P x 600 but depbloom-op (its preset's "
             f"per-rank batch and refinement); {head['epochs']} epoch(s); {data}; "
             f"machine: {head['machine']['name']}; commit {str(head['commit'])[:10]}", "",
             "| dataset | model | P | config | seeds | epoch s | events/s | test AP bm | new-node AP bm "
             "| collectives/ep | MB/ep | exchange MB/ep | cut | imbalance | GFLOP/s | % SGEMM peak "
             f"| speed-up vs strict | modelled epoch s ({prof}) | modelled speed-up | modelled bound (pipelined) |",
             "|" + "---|" * 20]
    for g in groups:
        lead = f"| {g['dataset']} | {g['model']} | {g['ranks']} | {g['config']} "
        modelled = (f"| {fixed(g['modelled_epoch_seconds'], 3)} | {fixed(g['modelled_speedup_vs_strict'], 2)} "
                    f"| {g['modelled_bound'] or '-'} |")
        if g["status"] != "ran":
            lines.append(lead + f"| {g['status']} |" + " |" * 12 + modelled[1:])
            continue
        secs = "oversub." if g["oversubscribed"] else fixed(g["train_seconds_per_epoch"], 2)
        pl, share = g["plan"], g["share_of_sgemm_peak"]
        lines.append(
            lead + f"| {g['seeds']} | {secs} | {fixed(g['events_per_s'], 0)} | {fixed(g['test_ap_batch_mean'], 4)} "
            f"| {fixed(g['test_new_nodes_ap_batch_mean'], 4)} | {fixed(g['collectives_per_epoch'], 0)} "
            f"| {fixed(mb(g['bytes_per_epoch']), 2)} | {fixed(mb(g['exchange_bytes_per_epoch']), 2)} "
            f"| {fixed(pl.get('cut_fraction'), 3)} | {fixed(pl.get('max_imbalance'), 3)} | {fixed(g['gflops_per_s'], 1)} "
            f"| {fixed(None if share is None else 100 * share, 1)} | {fixed(g['speedup_vs_strict'], 2)} "
            + modelled)
    lines += ["", "oversub.: more ranks than cores; AP and counts exact, time not a speed. "
              "Modelled columns come from the cost model (docs/cost_model.md), not measured."]
    return "\n".join(lines) + "\n"


def machine():
    cpu = cpu_model()
    cpu = "unknown CPU" if cpu is None else cpu
    return {"name": f"{cpu}, {os.cpu_count()} cores", "cpu_model": cpu,
            "nproc": os.cpu_count()}


# --- check ------------------------------------------------------------------------------

def close(a, b):
    return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)


def check(csv_path, rows):
    """Each CSV row that ran, read back, against its run's metrics.jsonl (AP, counts, bytes);
    its time-to-target cells against the target and curves recomputed from them
    (time_to_target.check); each epoch's collectives against the plan's forecast; P = 1
    strict against P = 1 depbloom (one rank is single-device training whatever the
    strategy: the same AP). Returns the list of mismatches."""
    table = list(csv.DictReader(open(csv_path)))
    bad = time_to_target.check(table, lambda run: curve(run_metrics(run)[0]))
    for r in table:
        if not r["status"].startswith("exit"):
            continue
        where = f"{r['dataset']} {r['model']} P={r['ranks']} {r['config']} seed {r['seed']}"
        if r["status"] != "exit 0":
            bad.append(f"{where}: {r['status']}")
            continue
        ep, tests = run_metrics(r["run_dir"])
        if not ep or not tests:
            bad.append(f"{where}: no epoch or test line in metrics.jsonl")
            continue
        t = tests[-1]
        expect = {"test_ap_batch_mean": t["test"]["ap_batch_mean"],
                  "test_new_nodes_ap_batch_mean": t["test_new_nodes"]["ap_batch_mean"],
                  "test_ap": t["test"]["ap"], "epochs": len(ep)}
        for key in ("collectives", "bytes", "exchange_bytes"):
            vals = [comm_totals(l["comm"])[key] for l in ep]
            expect[f"{key}_per_epoch"] = sum(vals) / len(vals)
        for k, v in expect.items():
            if not close(r[k] or None, v):
                bad.append(f"{where}: {k} {r[k]!r} in the CSV, {v!r} in metrics.jsonl")
        plan = json_line(os.path.join(r["run_dir"], "plan.json"), "plan") or {}
        for l in ep:  # the plan is the same every epoch
            for k in KINDS:
                got, want = l["comm"].get(k) or {}, (plan.get("comm") or {}).get(k) or {}
                for field in ("calls", "bytes"):
                    if got.get(field, 0) != want.get(field, 0):
                        bad.append(f"{where}: epoch {l['epoch']} {k} {field} {got.get(field, 0)}, "
                                   f"the plan forecast {want.get(field, 0)}")
            for k in ("exchanges", "exchange_bytes", "exchanged_rows", "exchanged_mails"):
                if l["comm"].get(k, 0) != (plan.get("comm") or {}).get(k, 0):
                    bad.append(f"{where}: epoch {l['epoch']} {k} {l['comm'].get(k, 0)}, "
                               f"the plan forecast {(plan.get('comm') or {}).get(k, 0)}")
    singles = {}
    for r in rows:
        if r["ranks"] == 1 and r["config"] in ("strict", "depbloom") and r.get("exit_code") == 0:
            singles.setdefault((r["dataset"], r["model"], r["seed"]), {})[r["config"]] = r
    for (d, mo, seed), pair in singles.items():
        if len(pair) < 2:
            continue
        for k in ("test_ap_batch_mean", "test_new_nodes_ap_batch_mean"):
            a, b = pair["strict"].get(k), pair["depbloom"].get(k)
            if a is None or a != b:
                bad.append(f"{d} {mo} P=1 seed {seed}: {k} strict {a!r}, depbloom {b!r} (must be equal)")
    return bad


def read_manifest(path):
    """The runs of a suite's manifest.tsv, one dict per run folder. Folders are named
    relative to the manifest (older manifests hold absolute paths, which join leaves as they
    are), so a suite's folder can be moved; a resumed suite may list a folder again, and its
    last line holds."""
    cols = ("dataset", "model", "p", "config", "seed", "threads", "batch", "dir", "status")
    here = os.path.dirname(os.path.abspath(path))
    runs = {}
    for line in open(path):
        if not line.strip():
            continue
        m = dict(zip(cols, line.rstrip("\n").split("\t")))
        m["dir"] = os.path.join(here, m["dir"])
        for k in ("p", "seed", "threads", "batch"):
            m[k] = int(m[k])
        runs.pop(os.path.basename(m["dir"]), None)
        runs[os.path.basename(m["dir"])] = m
    return list(runs.values())


def summarise(a):
    manifest = read_manifest(a.manifest)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    peak, peak_source = sgemm_peak(a.gemm, root)
    rows = [summarise_run(m, a.cores, peak) for m in manifest]
    head = {"benchmark": "speedup", "mode": a.mode, "commit": a.commit, "machine": machine(),
            "generated": utc_now(),
            "suite_seconds": a.seconds, "epochs": a.epochs, "max_events": a.max_events,
            "synth_scale": a.scale, "window_steps": 1, "cores": a.cores,
            "batch_size": "P x 600; depbloom-op: the preset's",
            "modelled": a.modelled == "yes", "profile": a.profile,
            "sgemm_peak_flops": peak, "sgemm_peak_source": peak_source}
    for r in rows:
        r["config_hash"] = r.get("config_hash")
    groups = aggregate(rows)
    to_target, goals = time_to_target.headline(rows)
    time_to_target.per_run(rows, goals)
    stem = os.path.join(a.out_dir, "speedup")
    write_json(stem + ".json", dict(head, time_to_target=to_target,
                                    targets=[dict(dataset=d, model=m, **g) for (d, m), g in goals.items()],
                                    summary=groups, runs=rows), "speedup")
    with open(stem + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(csv_row(r, head) for r in rows)
    chosen = time_to_target.choose(to_target)
    if chosen:
        head["operating_points"] = [{"dataset": d, "model": m, "chosen": g["chosen"]}
                                    for (d, m), g in chosen.items()]
    table = ("## Time to single-device accuracy\n\n" + time_to_target.markdown(to_target, goals, head)
             + ("\n## Operating-point grid\n" + time_to_target.grid_markdown(chosen) if chosen else "")
             + "\n## Epoch time and traffic\n\n" + markdown(groups, head))
    open(stem + ".md", "w").write(table)
    print(table)
    return report_check(stem + ".csv", rows, f"; suite {a.seconds} s")


def report_check(csv_path, rows, tail=""):
    bad = check(csv_path, rows)
    for b in bad:
        print(f"[speedup] check failed: {b}", file=sys.stderr)
    ran = sum(r.get("exit_code") == 0 for r in rows)
    print(f"[speedup] {ran} runs checked against metrics.jsonl and their plans: "
          f"{'all agree' if not bad else f'{len(bad)} mismatches'}{tail}", file=sys.stderr)
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("estimate")
    e.add_argument("--plan", required=True, help="--plan output at one rank's batch")
    e.add_argument("--ranks", type=int, required=True)
    c = sub.add_parser("check", help="check speedup.csv and speedup.json's runs again")
    c.add_argument("--csv", required=True)
    c.add_argument("--json", required=True)
    s = sub.add_parser("summarise")
    for k in ("--manifest", "--out-dir", "--mode", "--scale", "--profile", "--modelled",
              "--gemm", "--commit", "--epochs"):
        s.add_argument(k, required=True)
    for k in ("--cores", "--max-events", "--seconds"):
        s.add_argument(k, type=int, required=True)
    a = p.parse_args()
    if a.cmd == "estimate":
        print(f"{estimate_gib(a.plan, a.ranks):.2f}")
        return 0
    if a.cmd == "check":
        return report_check(a.csv, json.load(open(a.json))["runs"])
    return summarise(a)


if __name__ == "__main__":
    sys.exit(main())

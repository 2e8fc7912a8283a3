"""refine.sh's report: the runs its manifest lists (one line per run: model, dataset,
batch, m, epochs, seed, run folder, exit code) into one JSON file (each run; per model,
dataset, batch and epochs the means per m, the m chosen on validation AP against m = 1
and batch 600, and where the equal-steps runs exist the batch-600 AP loss split into
fewer steps and stale memory), and Markdown tables on stdout.

    refine_report.py OUT MANIFEST EPOCHS MAX_EVENTS CORES AGGREGATE COHERENCE
                     COHERENCE_SAMPLE EVAL_BATCH START
"""
import statistics
import sys

from bench_metrics import (commit, cpu_model, fixed, known_mean, manifest_lines, run_device,
                           run_metrics, utc_now, write_json)

APS = ("test_ap_batch_mean", "test_new_nodes_ap_batch_mean")


def settings(argv):
    """The command line's settings (after OUT and MANIFEST), as the JSON names them."""
    epochs, max_events, cores = map(int, argv[0:3])
    coherence, coherence_sample = map(float, argv[4:6])
    return {"epochs": epochs, "max_events": max_events, "cores": cores, "aggregate": argv[3],
            "coherence_weight": coherence, "coherence_sample": coherence_sample,
            # "config" (the config's eval.batch_size), "train" or a number
            "eval_batch": argv[6],
            "start": argv[7]}  # refine.start of the m > 1 runs


def metrics_entry(ep_lines, tests):
    """A run's figures from its epoch lines and test lines."""
    per = lambda f: [f(l) for l in ep_lines]
    val = per(lambda l: (l.get("val") or {}).get("ap_batch_mean"))
    t = tests[-1] if tests else {}
    best = t.get("best_epoch")
    pick = lambda s: (t.get(s) or {}).get("ap_batch_mean")
    refined = per(lambda l: l["refined_rows_per_batch"])
    rows = per(lambda l: l["memory_rows_per_batch"])
    return {
        "epochs_run": len(ep_lines), "best_epoch": best, "val_ap_batch_mean": val,
        "best_val_ap_batch_mean": val[best - 1] if best and best <= len(val) else None,
        "test_ap_batch_mean": pick("test"), "test_new_nodes_ap_batch_mean": pick("test_new_nodes"),
        "test_ap": (t.get("test") or {}).get("ap"),
        "events_per_s": statistics.fmean(per(lambda l: l["events_per_s"])),
        "train_seconds_per_epoch": statistics.fmean(per(lambda l: l["train_seconds"])),
        "refined_rows_per_batch": refined, "memory_rows_per_batch": rows,
        # Refined copies are per (row, micro-batch): a row read in several can count twice.
        "refined_share": statistics.fmean(r / u if u else 0.0 for r, u in zip(refined, rows)),
        "refine_seconds": per(lambda l: l["stage_s"].get("refine", 0.0)),
        "final_loss": ep_lines[-1]["loss"],
        "final_coherence_loss": ep_lines[-1].get("coherence_loss")}


def summarise(fields, s):
    """One manifest line (its fields as strings) -> one run's entry; s: settings()."""
    model, dataset, batch, m, ep, seed, run, rc = fields
    m = int(m)
    e = {"model": model, "dataset": dataset, "batch_size": int(batch), "micro_batches": m,
         "aggregate": s["aggregate"] if m > 1 else None,
         "coherence_weight": s["coherence_weight"] if m > 1 else 0.0,
         "start": s["start"] if m > 1 else None, "epochs": int(ep), "seed": int(seed),
         "run_dir": run, "exit_code": int(rc)}
    dev = run_device(run)
    if dev:
        e["device"], e["cpu_threads"] = dev
    ep_lines, tests = run_metrics(run)
    if ep_lines:
        e.update(metrics_entry(ep_lines, tests))
    return e


def cell(rs):
    """Means over the seeds' runs `rs` of one m."""
    c = {k: known_mean(r.get(k) for r in rs)
         for k in ("best_val_ap_batch_mean", *APS, "events_per_s", "refined_share")}
    c["refine_seconds_per_epoch"] = known_mean(known_mean(r.get("refine_seconds") or [])
                                               for r in rs)
    c["seeds"] = sum(r.get("test_ap_batch_mean") is not None for r in rs)
    return c


def paired(a, b, key):
    """Runs `a` (the chosen m) minus runs `b` (m = 1) in `key`, per seed."""
    bs = {r["seed"]: r.get(key) for r in b}
    d = [r.get(key) - bs[r["seed"]] for r in a
         if r.get(key) is not None and bs.get(r["seed"]) is not None]
    sd = statistics.stdev(d) if len(d) > 1 else None
    return {"mean": known_mean(d), "sd": sd, "se": sd / len(d) ** 0.5 if sd is not None else None,
            "n": len(d), "gains": sum(x > 0 for x in d)}


def group_runs(runs):
    """{(model, dataset, batch, epochs): {m: runs}}"""
    groups = {}
    for r in runs:
        groups.setdefault((r["model"], r["dataset"], r["batch_size"], r["epochs"]), {}) \
              .setdefault(r["micro_batches"], []).append(r)
    return groups


def choose_m(s, by_m, base):
    """Into summary entry `s` (its by_m set): the m with the best mean validation AP (never
    test AP), and per AP kind m = 1, the chosen m and `base` (batch 600, m = 1) with the
    share of batch 600's advantage the chosen m recovers."""
    vals = {m: c["best_val_ap_batch_mean"] for m, c in ((int(k), c) for k, c in s["by_m"].items())
            if c.get("best_val_ap_batch_mean") is not None}
    if not vals or 1 not in by_m or len(by_m) == 1:  # batch 600 runs m = 1 only
        return
    m = s["chosen_m"] = max(vals, key=vals.get)
    for k in APS:
        one, ch = known_mean(r.get(k) for r in by_m[1]), known_mean(r.get(k) for r in by_m[m])
        b600 = known_mean(r.get(k) for r in base)
        gap = None if None in (b600, one) else b600 - one
        s[k] = {"m1": one, "chosen": ch, "batch600": b600, "paired_diff": paired(by_m[m], by_m[1], k),
                "loss_recovered_share": (ch - one) / gap if gap and gap > 0 and ch is not None else None}


def decompose(summary, groups, epochs):
    """Where batch 4800 ran 8x the epochs too: batch 600's test AP advantage split into fewer
    optimiser steps and stale memory."""
    for (mo, d, b, ep), _ in groups.items():
        a1 = lambda e: known_mean(r.get(APS[0]) for r in groups.get((mo, d, b, e), {}).get(1, []))
        b600 = known_mean(r.get(APS[0]) for r in groups.get((mo, d, 600, epochs), {}).get(1, []))
        eq, st = a1(epochs), a1(8 * epochs)
        if b == 4800 and ep == 8 * epochs and None not in (b600, eq, st):
            s = summary[f"{mo}/{d}"]
            s["loss_decomposition"] = {
                "total": b600 - eq, "fewer_steps": st - eq, "stale_memory": b600 - st,
                "stale_memory_recovered_share":
                    s[f"batch4800_epochs{ep}"].get(APS[0], {}).get("loss_recovered_share")}


def summarise_groups(runs, epochs):
    """{"model/dataset": {"batch<B>_epochs<E>": {by_m, chosen_m, per AP kind}, ...}}"""
    groups, summary = group_runs(runs), {}
    for (mo, d, b, ep), by_m in sorted(groups.items()):
        s = summary.setdefault(f"{mo}/{d}", {}).setdefault(f"batch{b}_epochs{ep}", {})
        s["by_m"] = {str(m): cell(rs) for m, rs in sorted(by_m.items())}
        choose_m(s, by_m, groups.get((mo, d, 600, epochs), {}).get(1, []))
    decompose(summary, groups, epochs)
    return summary


def by_m_table(summary):
    """The means per m of each group, as Markdown lines (* marks the chosen m)."""
    lines = ["| model | dataset | batch | epochs | m | seeds | val AP bm | test AP bm "
             "| new-node AP bm | events/s | refined share | refine s/ep |", "|" + "---|" * 12]
    for key, sg in summary.items():
        for g, s in sg.items():
            if not g.startswith("batch"):
                continue
            b, ep = g[5:].split("_epochs")
            for m, c in s["by_m"].items():
                chosen = " *" if s.get("chosen_m") == int(m) else ""
                lines.append(
                    f"| {key.replace('/', ' | ')} | {b} | {ep} | {m}{chosen} | {c['seeds']} "
                    f"| {fixed(c['best_val_ap_batch_mean'], 4)} | {fixed(c['test_ap_batch_mean'], 4)} "
                    f"| {fixed(c['test_new_nodes_ap_batch_mean'], 4)} | {fixed(c['events_per_s'], 0)} "
                    f"| {fixed(c['refined_share'], 3)} | {fixed(c['refine_seconds_per_epoch'], 2)} |")
    return lines


def chosen_table(summary):
    """The chosen m against m = 1 and batch 600, as Markdown lines."""
    pd = lambda p: f"{fixed(p['mean'], 4)} ({fixed(p['sd'], 4)})"
    lines = ["| model | dataset | batch | epochs | chosen m | test AP m=1 | test AP chosen "
             "| diff (sd) | seeds gaining | diff / se | new-node diff (sd) "
             "| share of batch-600 loss recovered |", "|" + "---|" * 12]
    for key, sg in summary.items():
        for g, s in sg.items():
            if "chosen_m" not in s:
                continue
            t, n = s["test_ap_batch_mean"], s["test_new_nodes_ap_batch_mean"]
            b, ep = g[5:].split("_epochs")
            p = t["paired_diff"]
            ratio = p["mean"] / p["se"] if p["mean"] is not None and p["se"] else None
            lines.append(
                f"| {key.replace('/', ' | ')} | {b} | {ep} | {s['chosen_m']} | {fixed(t['m1'], 4)} "
                f"| {fixed(t['chosen'], 4)} | {pd(p)} | {p['gains']} of {p['n']} "
                f"| {fixed(ratio, 1)} | {pd(n['paired_diff'])} "
                f"| {fixed(t['loss_recovered_share'], 2)} |")
    return lines


def decomposition_lines(summary):
    lines = []
    for key, sg in summary.items():
        if "loss_decomposition" in sg:
            x = sg["loss_decomposition"]
            lines += ["", f"{key}: batch 600 -> 4800 test AP loss {fixed(x['total'], 4)}: "
                      f"fewer steps {fixed(x['fewer_steps'], 4)}, stale memory "
                      f"{fixed(x['stale_memory'], 4)}; refinement recovers "
                      f"{fixed(x['stale_memory_recovered_share'], 2)} of the latter"]
    return lines


def main(argv):
    out, manifest = argv[0:2]
    s = settings(argv[2:])
    runs = [summarise(fields, s) for fields in manifest_lines(manifest)]
    head = {"benchmark": "refine", "commit": commit(),
            "machine": {"nproc": s["cores"], "cpu_model": cpu_model()}, "generated": utc_now()}
    head.update((k, s[k]) for k in ("epochs", "max_events", "aggregate", "eval_batch",
                                    "coherence_weight", "coherence_sample", "start"))
    summary = summarise_groups(runs, s["epochs"])
    write_json(out, dict(head, runs=runs, summary=summary), "refine")
    lines = (by_m_table(summary) + ["", "(* m chosen on validation AP)", ""]
             + chosen_table(summary) + decomposition_lines(summary))
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])

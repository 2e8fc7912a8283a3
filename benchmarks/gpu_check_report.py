"""tools/gpu-check.sh's summary lines, each printed from run folders' metrics.jsonl:
`ranks`: two CUDA ranks over MPI against one rank (epoch loss, validation AP, sync points);
`host-waits`: host waits per training step, by epoch; `cost-model`: the cost model's
modelled one-GPU epoch and stages (a --plan --profile JSON line) against the measured ones.

    gpu_check_report.py ranks ONE_RANK_METRICS TWO_RANKS_METRICS
    gpu_check_report.py host-waits METRICS
    gpu_check_report.py cost-model METRICS PLAN_JSON
"""
import json
import sys


def lines(path):
    """The JSON objects of a metrics.jsonl."""
    with open(path) as f:
        return [json.loads(l) for l in f]


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def ranks(one_path, two_path):
    e1, e2 = lines(one_path)[0], lines(two_path)[0]
    return ("cli 2 CUDA ranks over mpi vs 1: epoch loss %.6f vs %.6f (rel %.1e); "
            "val AP %.6f vs %.6f (rel %.1e); sync points %s"
            % (e2["loss"], e1["loss"], rel(e2["loss"], e1["loss"]), e2["val"]["ap"],
               e1["val"]["ap"], rel(e2["val"]["ap"], e1["val"]["ap"]),
               e2.get("comm", {}).get("sync_points")))


def host_waits(path):
    waits = [j.get("host_waits_per_step") for j in lines(path) if "epoch" in j]
    return ("host waits per training step, by epoch: %s (goal: 1, the loss read)"
            % ", ".join("%.2f" % w if w is not None else "missing" for w in waits))


def cost_model(metrics_path, plan_path):
    with open(metrics_path) as f:
        ep = [json.loads(l) for l in f if '"stage_s"' in l]  # the epoch lines
    with open(plan_path) as f:
        model = json.load(f)["plan"]["model"]
    meas = sum(e["train_seconds"] for e in ep) / len(ep)
    pred = model["epoch_seconds"]["serial"]
    stages = ", ".join("%s %.3f/%.3f" % (k, v, sum(e["stage_s"][k] for e in ep) / len(ep))
                       for k, v in model["stages"].items() if k in ep[0]["stage_s"])
    return ("cost model (%s, modelled) TGN WIKI one-GPU epoch %.3f s vs measured %.3f s: "
            "%+.0f%%; stages modelled/measured s: %s"
            % (model["profile"], pred, meas, 100 * (pred - meas) / meas, stages))


COMMANDS = {"ranks": (ranks, 2), "host-waits": (host_waits, 1), "cost-model": (cost_model, 2)}


def main(argv):
    command, nargs = COMMANDS.get(argv[0] if argv else None, (None, 0))
    if command is None or len(argv) != nargs + 1:
        sys.exit(__doc__)
    print(command(*argv[1:]))


if __name__ == "__main__":
    main(sys.argv[1:])

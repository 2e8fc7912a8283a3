"""Traces for a refactor that must change no number: record the runs before, compare after.

    python3 benchmarks/trace_runs.py record --build DIR --out DIR
    python3 benchmarks/trace_runs.py compare BEFORE AFTER

`record` trains each run of RUNS for 2 epochs on the first 30,000 WIKI events with every
step's loss logged, and writes --plan's JSON for strict and depbloom at P = 2, 4 and 8.
`compare` checks every steps.jsonl string for string, and every metrics.jsonl and plan
value except timings (keys ending in `seconds`, `_s` or `per_s`); it exits 1 on a
difference. A key only AFTER has is an addition, not a difference (a refactor may report
more): it is listed, and its values are compared wherever both runs have it. Run it from
the repository root.
"""
import json
import os
import subprocess
import sys

COMMON = ["--threads", "2", "--set", "data.max_events=30000", "--set", "train.epoch=2",
          "--set", "run.step_log=true"]
TGN = ["--config", "configs/tgn-wiki.yaml"]
RUNS = {
    "tgn": TGN, "jodie": ["--config", "configs/jodie-wiki.yaml"],
    "apan": ["--config", "configs/apan-wiki.yaml"], "tgat": ["--config", "configs/tgat-wiki.yaml"],
    "tgn_refine4": TGN + ["--set", "refine.micro_batches=4"],
    "tgn_no_pipeline": TGN + ["--set", "pipeline.enabled=false"],
    "tgn_strict2": TGN + ["--ranks", "2", "--set", "strategy.name=strict"],
    "tgn_depbloom2": TGN + ["--ranks", "2", "--set", "strategy.name=depbloom",
                            "--set", "train.batch_size=1200"],
    "tgn_refine_coherence": TGN + ["--set", "refine.micro_batches=4", "--set",
                                   "refine.coherence_weight=0.5", "--set", "refine.start=updater",
                                   "--set", "eval.negatives=5"],
}
PLANS = [(s, p) for s in ("strict", "depbloom") for p in (2, 4, 8)]


def is_timing(key):
    return key.endswith("seconds") or key.endswith("_s") or key.endswith("per_s")


def without_timings(value):
    """The value with every key that is a timing dropped, at any depth."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not is_timing(k)}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def common_part(after, before):
    """`after` restricted to the keys `before` has too, at any depth."""
    if isinstance(after, dict) and isinstance(before, dict):
        return {k: common_part(v, before[k]) for k, v in after.items() if k in before}
    if isinstance(after, list) and isinstance(before, list) and len(after) == len(before):
        return [common_part(a, b) for a, b in zip(after, before)]
    return after


def added_keys(after, before, path=""):
    """The dotted paths of the keys `after` has and `before` lacks, at any depth."""
    if not (isinstance(after, dict) and isinstance(before, dict)):
        return set()
    out = set()
    for k, v in after.items():
        here = f"{path}.{k}" if path else k
        out |= added_keys(v, before[k], here) if k in before else {here}
    return out


def plan_json(stdout):
    """--plan's JSON (its last line that opens an object) without plan.seconds."""
    line = [s for s in stdout.splitlines() if s.startswith("{")][-1]
    plan = json.loads(line)
    plan.get("plan", {}).pop("seconds", None)
    return plan


def record(build, out):
    train = os.path.join(build, "depbloom-train")
    for name, args in RUNS.items():
        run = os.path.join(out, name)
        rc = subprocess.call([train] + args + COMMON + ["--out", run],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"{name}: exit {rc}")
    for strategy, ranks in PLANS:
        stdout = subprocess.run([train] + TGN + COMMON + ["--plan", "--ranks", str(ranks), "--set",
                                f"strategy.name={strategy}"], capture_output=True, text=True,
                                check=True).stdout
        with open(os.path.join(out, f"plan_{strategy}_{ranks}.json"), "w") as f:
            json.dump(plan_json(stdout), f, sort_keys=True)


def lines_of(path, strip):
    with open(path) as f:
        return [without_timings(json.loads(s)) if strip else s for s in f]


def changed_keys(before, after, path=""):
    """The dotted paths whose values differ between two parsed lines, at any depth."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = set()
        for k in before.keys() & after.keys():
            out |= changed_keys(before[k], after[k], f"{path}.{k}" if path else k)
        return out
    return set() if before == after else {path or "(the line)"}


def same_lines(a, b, strip, added, changed):
    """Whether file b holds a's lines (b's added keys dropped; they go into `added`, and the
    keys whose values differ into `changed`)."""
    old, new = lines_of(a, strip), lines_of(b, strip)
    if not strip or len(old) != len(new):
        return old == new
    for x, y in zip(old, new):
        added |= added_keys(y, x)
        changed |= changed_keys(x, y)
    return old == [common_part(y, x) for x, y in zip(old, new)]


def differences(before, after, added=None):
    """The files of `before` whose content `after` does not match (a missing one included);
    the keys only `after` has go into the set `added` when one is given."""
    out = []
    added = set() if added is None else added
    for root, _, files in os.walk(before):
        for name in sorted(files):
            if not name.endswith((".jsonl", ".json")) or name == "config.json":
                continue
            a = os.path.join(root, name)
            b = os.path.join(after, os.path.relpath(a, before))
            strip = name != "steps.jsonl"
            changed = set()
            if not os.path.exists(b) or not same_lines(a, b, strip, added, changed):
                keys = f" ({', '.join(sorted(changed)[:6])})" if changed else ""
                out.append(os.path.relpath(a, before) + keys)
    return sorted(out)


def main(argv):
    if len(argv) == 5 and argv[0] == "record" and argv[1] == "--build" and argv[3] == "--out":
        return record(argv[2], argv[4]) or 0
    if len(argv) == 3 and argv[0] == "compare":
        added = set()
        diff = differences(argv[1], argv[2], added)
        for d in diff:
            print(f"differs: {d}")
        for key in sorted(added):
            print(f"added: {key}")
        print(f"{'identical' if not diff else 'DIFFERENT'}: {argv[1]} against {argv[2]}")
        return 1 if diff else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

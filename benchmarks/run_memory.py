"""A training run's memory in GiB before it starts (speedup.sh refuses runs that would not
fit), from `depbloom-train --plan` of one rank's share of the batch. The plan's dry run
carves every step's arena tensors as the real step does (without touching them), so its
Buffers' peak (`peak_bytes.host`: the stream, its neighbour index, the node state and the
arenas) is a real one-device run's at that batch: TGN on 60,000 WIKI events at batch 4,800,
3,029,732,230 bytes in both. Each rank holds one such process, plus a base beyond its
Buffers (binary, BLAS and MPI: 0.12 GiB measured for APAN on 2,000 WIKI events, where the
Buffers' peak is 0.38 GiB)."""
import json

GIB = float(1 << 30)
BASE_GIB = 0.25  # per process, beyond its Buffers


def plan_peak_bytes(path):
    """`peak_bytes.host` of the plan line in a depbloom-train --plan output file."""
    with open(path) as f:
        for line in f:
            if line.startswith('{"plan"'):
                return json.loads(line)["plan"]["peak_bytes"]["host"]
    raise ValueError(f"{path}: no plan line")


def estimate_gib(plan_path, ranks):
    """`ranks` processes, each the plan's one-device peak (at the rank's share of the batch)
    and the base."""
    return ranks * (plan_peak_bytes(plan_path) / GIB + BASE_GIB)

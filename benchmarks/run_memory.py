"""A training run's memory in GiB from its data's and config's shapes, before it starts
(speedup.sh refuses runs that would not fit)."""
import json
import math
import os
import re

GIB = float(1 << 30)


def stream_shape(data, max_events):
    """(events, nodes, edge features) of a depbloom-data folder or a JODIE-style CSV."""
    if os.path.isdir(data):
        meta = json.load(open(os.path.join(data, "meta.json")))
        events, nodes, dim = meta["num_events"], meta["num_nodes"], meta["edge_dim"]
    else:
        events, top, dim = 0, 0, 0
        with open(data) as f:
            next(f)
            for line in f:
                cols = line.split(",")
                events, top, dim = events + 1, max(top, int(cols[0]), int(cols[1])), len(cols) - 4
        nodes = top + 1
    return (min(events, max_events) if max_events > 0 else events), nodes, dim


def config_dims(config):
    """(memory width, time width, mailbox slots, neighbours) from a model config's YAML."""
    text = open(config).read()
    grab = lambda key, default: max([int(v) for v in re.findall(rf"{key}:\s*(\d+)", text)] or [default])
    neighbours = max([int(v) for v in re.findall(r"neighbor:\s*\n\s*-\s*(\d+)", text)] or [10])
    return grab("dim_out", 100), grab("dim_time", 100), grab("mailbox_size", 1), neighbours


def estimate_gib(data, config, ranks, batch, max_events):
    """Every rank holds the whole stream, its neighbour index and the node state (memory
    and its last-update time, mailbox), plus one step's saved activations and a process's
    base (binary, BLAS and MPI buffers, taken as 0.25 GiB). An estimate from the shapes,
    not checked against a measured peak."""
    events, nodes, edge_dim = stream_shape(data, max_events)
    mem, time_dim, mailbox, k = config_dims(config)
    stream = events * (4 + 4 + 8 + 8 + 4 * edge_dim)
    neighbour_index = 2 * events * (4 + 8 + 8)
    node_state = 4 * nodes * (mem + mailbox * (2 * mem + edge_dim + time_dim) + 2)
    rows = 3 * math.ceil(batch / ranks) * (k + 1)
    activations = 12 * 4 * rows * (mem + edge_dim + time_dim + mem)
    return ranks * (stream + neighbour_index + node_state + activations + 0.25 * GIB) / GIB

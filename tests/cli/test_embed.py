"""depbloom-embed and depbloom-train --eval-only --scores end to end on a checkpoint trained
here (1 epoch on the first 3000 WIKI events): the files load in numpy with the documented
shapes, dtypes, ids and manifest; --scores's dump gives the run's test AP again; bad --nodes
lines and bad --at values fail with their exit codes. Needs numpy (python3-numpy).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy

TRAIN = os.environ.get("DEPBLOOM_TRAIN", "build/depbloom-train")
EMBED = os.environ.get("DEPBLOOM_EMBED", "build/depbloom-embed")
SOURCE = os.environ.get("DEPBLOOM_SOURCE", os.getcwd())
WIKI = os.path.join(SOURCE, "data", "wikipedia", "wikipedia_edges.csv")
EVENTS = 3000
sys.path.insert(0, os.path.join(SOURCE, "tests", "datasets"))
from test_tgb import whole_ap  # noqa: E402  (the evaluator's AP, written once)


def wiki_rows():
    """(user, item, time) of every data row of the shipped WIKI file (the run keeps the
    first EVENTS events, and the whole file's nodes)."""
    rows = []
    with open(WIKI) as f:
        next(f)
        for line in f:
            u, i, t = line.split(",")[:3]
            rows.append((int(u), int(i), float(t)))
    return rows


class EmbedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="depbloom-embed-")
        cls.run_dir = os.path.join(cls.tmp, "run")
        r = subprocess.run([TRAIN, "--device", "cpu", "--data", WIKI, "--set", "train.epoch=1",
                            "--set", "data.max_events=%d" % EVENTS, "--set", "data.cache=false",
                            "--set", "run.progress=false", "--out", cls.run_dir],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        cls.ckpt = os.path.join(cls.run_dir, "best.ckpt")
        cls.rows = wiki_rows()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def embed(self, *args):
        return subprocess.run([EMBED, self.ckpt, *args], capture_output=True, text=True,
                              timeout=120)

    def load(self, out):
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
        arrays = {name[:-4]: numpy.load(os.path.join(out, name)) for name in manifest["files"]}
        return manifest, arrays

    def test_scores_give_the_runs_test_ap(self):
        scores = os.path.join(self.tmp, "scores")
        r = subprocess.run([TRAIN, "--eval-only", self.ckpt, "--scores", scores],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        with open(os.path.join(self.run_dir, "metrics.jsonl")) as f:
            test = [json.loads(line) for line in f if '"checkpoint"' in line][-1]["test"]
        d = {k: numpy.load(os.path.join(scores, k + ".npy"))
             for k in ("event", "row", "src", "dst", "time", "pos", "neg")}
        self.assertEqual(d["neg"].shape, (test["events"], 1))
        for row, u, i, t in zip(d["row"], d["src"], d["dst"], d["time"]):
            self.assertEqual(self.rows[row], (u, i, t))
        self.assertAlmostEqual(whole_ap(d["pos"], d["neg"]), test["ap"], delta=1e-12)
        # The new-node pass in its own folder, the same way.
        with open(os.path.join(self.run_dir, "metrics.jsonl")) as f:
            fresh = [json.loads(line) for line in f if '"checkpoint"' in line][-1]["test_new_nodes"]
        n = {k: numpy.load(os.path.join(scores, "new_nodes", k + ".npy"))
             for k in ("row", "src", "dst", "time", "pos", "neg")}
        self.assertEqual(n["neg"].shape, (fresh["events"], 1))
        for row, u, i, t in zip(n["row"], n["src"], n["dst"], n["time"]):
            self.assertEqual(self.rows[row], (u, i, t))
        self.assertAlmostEqual(whole_ap(n["pos"], n["neg"]), fresh["ap"], delta=1e-12)
        self.assertFalse([n for n in os.listdir(self.tmp) if ".tmp-" in n])
        # --scores dumps an --eval-only test only.
        r = subprocess.run([TRAIN, "--scores", scores], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--eval-only", r.stdout + r.stderr)

    def test_all_nodes_at_a_time(self):
        at = self.rows[1500][2]
        out = os.path.join(self.tmp, "all")
        r = self.embed("--at", repr(at), "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        manifest, a = self.load(out)
        users = sorted({u for u, _, _ in self.rows})
        items = sorted({i for _, i, _ in self.rows})
        n = len(users) + len(items)
        self.assertEqual(a["ids"].tolist(), users + items)
        self.assertEqual(a["is_item"].tolist(), [0] * len(users) + [1] * len(items))
        self.assertEqual(a["memory"].shape, (n, manifest["model"]["memory_dim"]))
        self.assertEqual((a["memory"].dtype, a["last_update"].shape), (numpy.float32, (n,)))
        self.assertEqual(a["embedding"].shape, (n, manifest["model"]["embedding_dim"]))
        self.assertEqual(a["embedding"].dtype, numpy.float32)
        self.assertTrue(numpy.isfinite(a["embedding"]).all())
        replayed = sum(1 for _, _, t in self.rows[:EVENTS] if t <= at)
        self.assertEqual(manifest["events_replayed"], replayed)
        self.assertEqual(manifest["at"], at)
        with open(self.ckpt, "rb") as f:
            self.assertEqual(manifest["checkpoint_sha256"], hashlib.sha256(f.read()).hexdigest())
        for name, spec in manifest["files"].items():
            self.assertEqual(list(a[name[:-4]].shape), spec["shape"], name)
        # Only the nodes of the replayed events were updated, each at its last event; a memory
        # moves once a mail reaches it, so for nodes in two or more replay batches.
        last, batches = {}, {}
        for e, (u, i, t) in enumerate(self.rows[:replayed]):
            for v in (u, i):
                last[v] = t
                batches.setdefault(v, set()).add(e // manifest["eval_batch_size"])
        index = {v: k for k, v in enumerate(a["ids"].tolist())}
        for v, t in last.items():
            self.assertEqual(a["last_update"][index[v]], numpy.float32(t))
        moved = {a["ids"][k] for k in numpy.flatnonzero(numpy.abs(a["memory"]).sum(1) > 0)}
        self.assertEqual(moved, {v for v, b in batches.items() if len(b) > 1})
        self.assertGreater(len(moved), 0)

    def test_nodes_file_and_times_before_the_stream(self):
        nodes = os.path.join(self.tmp, "nodes.txt")
        user, item = self.rows[10][0], self.rows[20][1]
        with open(nodes, "w") as f:
            f.write("%d\n\n%d\n%d\n" % (item, user, item))
        out = os.path.join(self.tmp, "some")
        r = self.embed("--at", "-5", "--nodes", nodes, "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        manifest, a = self.load(out)
        self.assertEqual(a["ids"].tolist(), [item, user, item])
        self.assertEqual(manifest["events_replayed"], 0)
        self.assertTrue((a["memory"] == 0).all() and (a["last_update"] == 0).all())

    def test_bad_node_lines_name_the_file_and_line(self):
        nodes = os.path.join(self.tmp, "bad.txt")
        for text, line, words in (("%d\nabc\n" % self.rows[0][0], 2, "is not a node id"),
                                  ("\n\n999999999\n", 3, "no node has id 999999999")):
            with open(nodes, "w") as f:
                f.write(text)
            out = os.path.join(self.tmp, "bad")
            r = self.embed("--at", "100", "--nodes", nodes, "--out", out)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn("%s:%d: " % (nodes, line), r.stdout + r.stderr)
            self.assertIn(words, r.stdout + r.stderr)
            self.assertFalse(os.path.exists(out))

    def test_bad_times_are_usage_errors(self):
        for at in ("nan", "soon", "1e999", ""):
            r = self.embed("--at", at, "--out", os.path.join(self.tmp, "t"))
            self.assertEqual(r.returncode, 2, (at, r.stderr))
            self.assertIn("--at", r.stdout + r.stderr)
        self.assertEqual(self.embed("--out", os.path.join(self.tmp, "t")).returncode, 2)


if __name__ == "__main__":
    unittest.main()

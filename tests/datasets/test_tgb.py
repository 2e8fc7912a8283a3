"""TGB's evaluation end to end on a fixture written here: tools/tgb_negatives.py reads a
pickle this test writes with Python, and configs/tgn-tgbl-wiki.yaml trains and evaluates on
a small JODIE-format edge list with those negatives (data.protocol: tgb,
eval.negative_strategy: tgb). The MRR itself is checked against a hand computation in
tests/unit/train/test_tgb_eval.cpp; here the run must use every fixed negative and report it,
and --eval-only --scores's dump must give the run's test MRR and AP again, computed here.
Needs numpy (python3-numpy).
"""
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy

TRAIN = os.environ.get("DEPBLOOM_TRAIN", "build/depbloom-train")
SOURCE = os.environ.get("DEPBLOOM_SOURCE", os.getcwd())
CONVERTER = os.path.join(SOURCE, "tools", "tgb_negatives.py")
K = 3


def edge_list(path, events):
    """A JODIE-format edge list (users and items numbered apart, as tgbl-wiki's)."""
    rows = []
    with open(path, "w") as f:
        f.write("user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n")
        for i in range(events):
            user, item, t = i % 19, (i * 7) % 11, 50 + 4 * i
            f.write("%d,%d,%d,0,%.2f,%.2f\n" % (user, item, t, (i % 5) / 5.0, (i % 3) / 3.0))
            rows.append((user, item, t))
    return rows


def tgb_queries(rows, lo, hi, users):
    """TGB's dict for events with lo < t <= hi: items numbered after the users, as TGB does."""
    table = {}
    for user, item, t in rows:
        if lo < t <= hi:
            table[(user, users + item, t)] = numpy.array(
                [users + (item + j + 1) % 11 for j in range(K)], dtype=numpy.int64)
    return table


def tgb_mrr(pos, neg, batch):
    """TGB's one-vs-many MRR as the evaluator sums it: rank 1 + (negatives above) + half the
    ties, a mean per batch of eval.batch_size events weighted by its size."""
    total = 0.0
    for begin in range(0, len(pos), batch):
        rr = 0.0
        for p, row in zip(pos[begin:begin + batch], neg[begin:begin + batch]):
            rr += 1.0 / (1.0 + float((row > p).sum()) + 0.5 * float((row == p).sum()))
        n = len(pos[begin:begin + batch])
        total += rr / n * n
    return total / len(pos)


def whole_ap(pos, neg):
    """AP over every score of the split, ties one threshold (sklearn's, the evaluator's)."""
    scores = numpy.concatenate([pos, neg.ravel()])
    labels = numpy.concatenate([numpy.ones(len(pos)), numpy.zeros(neg.size)])
    order = numpy.argsort(-scores, kind="stable")
    tp = fp = tp_prev = 0
    ap = 0.0
    i = 0
    while i < len(order):
        s = scores[order[i]]
        while i < len(order) and scores[order[i]] == s:
            tp, fp = (tp + 1, fp) if labels[order[i]] else (tp, fp + 1)
            i += 1
        ap += float(tp - tp_prev) * (float(tp) / (tp + fp))
        tp_prev = tp
    return ap / len(pos)


class TgbTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="depbloom-tgb-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def convert(self, *args):
        return subprocess.run([sys.executable, CONVERTER, *args], capture_output=True,
                              text=True, timeout=60)

    def pickle(self, name, table):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            pickle.dump(table, f)
        return path

    def test_converter_reads_a_pickle(self):
        table = {(3, 40, 100): numpy.array([41, 42]), (4, 41, 107.0): [40, 43]}
        out = os.path.join(self.tmp, "neg")
        r = self.convert("--val", self.pickle("val.pkl", table), "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(numpy.load(os.path.join(out, "val_src.npy")).tolist(), [3, 4])
        self.assertEqual(numpy.load(os.path.join(out, "val_dst.npy")).tolist(), [40, 41])
        self.assertEqual(numpy.load(os.path.join(out, "val_ts.npy")).tolist(), [100.0, 107.0])
        neg = numpy.load(os.path.join(out, "val_neg.npy"))
        self.assertEqual((neg.dtype, neg.tolist()), (numpy.int64, [[41, 42], [40, 43]]))
        self.assertEqual(sorted(os.listdir(out)),
                         ["val_dst.npy", "val_neg.npy", "val_src.npy", "val_ts.npy"])

    def test_converter_refuses_ragged_or_foreign_pickles(self):
        ragged = {(1, 2, 3): [4, 5], (1, 2, 4): [4]}
        for table, words in ((ragged, "query 1 has 1 negatives"), ([1, 2], "non-empty dict")):
            r = self.convert("--test", self.pickle("x.pkl", table), "-o", self.tmp + "/o")
            self.assertEqual(r.returncode, 3)
            self.assertIn(words, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "o", "test_neg.npy")))

    def fixture_run_args(self, out, checkpoint="false"):
        """The fixture's edge list and TGB negatives, and a 1-epoch tgbl-wiki run into out."""
        rows = edge_list(os.path.join(self.tmp, "tgbl-fixture_edgelist.csv"), 400)
        ts = numpy.array([t for _, _, t in rows], dtype=float)
        val_time, test_time = numpy.quantile(ts, [0.70, 0.85])
        neg = os.path.join(self.tmp, "negatives")
        r = self.convert("--val", self.pickle("v.pkl", tgb_queries(rows, val_time, test_time, 19)),
                         "--test", self.pickle("t.pkl", tgb_queries(rows, test_time, 1e18, 19)),
                         "-o", neg)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [TRAIN, "--config", os.path.join(SOURCE, "configs", "tgn-tgbl-wiki.yaml"),
                "--device", "cpu", "--data", os.path.join(self.tmp, "tgbl-fixture_edgelist.csv"),
                "--set", "data.tgb_negatives=" + neg, "--set", "eval.negatives=%d" % K,
                "--set", "train.epoch=1", "--set", "run.checkpoint=" + checkpoint, "--out", out]

    def test_scores_dump_gives_the_runs_mrr_and_ap(self):
        out = os.path.join(self.tmp, "run")
        # 25-event evaluation batches: the 60 test events make batches of 25, 25 and 10.
        r = subprocess.run(self.fixture_run_args(out, "true") + ["--set", "eval.batch_size=25"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        scores = os.path.join(self.tmp, "scores")
        r = subprocess.run([TRAIN, "--eval-only", os.path.join(out, "best.ckpt"), "--scores",
                            scores], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        with open(os.path.join(out, "metrics.jsonl")) as f:
            test = [json.loads(line) for line in f if '"checkpoint"' in line][-1]["test"]
        load = {name: numpy.load(os.path.join(scores, name + ".npy"))
                for name in ("row", "src", "dst", "time", "pos", "neg")}
        self.assertEqual(load["neg"].shape, (60, K))
        self.assertEqual((load["pos"].dtype, load["neg"].dtype), (numpy.float32, numpy.float32))
        # The rows are the fixture's test events, with their original ids and times.
        rows = edge_list(os.path.join(self.tmp, "again.csv"), 400)
        for e, u, i, t in zip(load["row"], load["src"], load["dst"], load["time"]):
            self.assertEqual((rows[e][0], rows[e][1], float(rows[e][2])), (u, i, t))
        # Equal to the last bits but one: the compiler may fuse the evaluator's weighted sum
        # into a multiply-add (one rounding fewer than Python's).
        self.assertAlmostEqual(tgb_mrr(load["pos"], load["neg"], 25), test["mrr"], delta=1e-12)
        self.assertAlmostEqual(whole_ap(load["pos"], load["neg"]), test["ap"], delta=1e-12)

    def test_tgbl_wiki_config_evaluates_on_the_fixed_negatives(self):
        out = os.path.join(self.tmp, "run")
        args = self.fixture_run_args(out)
        r = subprocess.run(args, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        with open(os.path.join(out, "metrics.jsonl")) as f:
            lines = [json.loads(line) for line in f]
        test = [line["test"] for line in lines if line.get("split") == "test"][0]
        self.assertEqual(test["events"], 60)
        self.assertTrue(0 < test["mrr"] <= 1, test)
        # The config's own K (999) is not the fixture's: one line naming the key.
        r = subprocess.run(args[:-8] + ["--out", out + "2"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 2)
        self.assertIn("set eval.negatives: %d" % K, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()

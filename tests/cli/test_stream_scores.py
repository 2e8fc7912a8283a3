"""depbloom-stream against depbloom-train --eval-only --scores end to end, on a checkpoint
trained here (1 epoch on the first 3000 WIKI events): the dump's test events streamed, each
after its positive and its negatives (src.npy, dst.npy, neg_dst.npy, time.npy as queries),
at stream.batch_size = eval.batch_size, answer with pos.npy's and neg.npy's float32 bits.
Needs numpy (python3-numpy).
"""
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy

TRAIN = os.environ.get("DEPBLOOM_TRAIN", "build/depbloom-train")
STREAM = os.environ.get("DEPBLOOM_STREAM", "build/depbloom-stream")
SOURCE = os.environ.get("DEPBLOOM_SOURCE", os.getcwd())
WIKI = os.path.join(SOURCE, "data", "wikipedia", "wikipedia_edges.csv")
EVENTS = 3000


def bits(values):
    return numpy.asarray(values, dtype=numpy.float32).view(numpy.uint32)


class StreamScoresTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="depbloom-stream-")
        run_dir = os.path.join(cls.tmp, "run")
        r = subprocess.run([TRAIN, "--device", "cpu", "--data", WIKI, "--set", "train.epoch=1",
                            "--set", "data.max_events=%d" % EVENTS, "--set", "data.cache=false",
                            "--set", "eval.negatives=2", "--set", "run.progress=false",
                            "--out", run_dir], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        cls.ckpt = os.path.join(run_dir, "best.ckpt")
        cls.scores = os.path.join(cls.tmp, "scores")
        r = subprocess.run([TRAIN, "--eval-only", cls.ckpt, "--scores", cls.scores],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        with open(WIKI) as f:
            cls.lines = [line.strip() for line in f][1:]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_streamed_test_split_gives_the_dumps_bits(self):
        d = {k: numpy.load(os.path.join(self.scores, k + ".npy"))
             for k in ("row", "src", "dst", "time", "pos", "neg", "neg_dst")}
        n, k = d["neg"].shape
        self.assertEqual(d["neg_dst"].shape, (n, k))
        path = os.path.join(self.tmp, "input.csv")
        want = {}  # input line -> logit bits
        with open(path, "w") as out:
            line = 0
            for e in range(n):
                t = repr(float(d["time"][e]))
                for j, dst in enumerate([d["dst"][e]] + list(d["neg_dst"][e])):
                    line += 1
                    out.write("?,%d,%d,%s\n" % (d["src"][e], dst, t))
                    want[line] = d["pos"][e] if j == 0 else d["neg"][e][j - 1]
                line += 1
                out.write(self.lines[d["row"][e]] + "\n")
        r = subprocess.run([STREAM, self.ckpt, "--input", path], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        got = {}
        for row in r.stdout.splitlines():
            at, logit, _ = row.split(",")
            got[int(at)] = float(logit)
        self.assertEqual(sorted(got), sorted(want))
        lines = sorted(want)
        self.assertEqual(bits([got[i] for i in lines]).tolist(),
                         bits([want[i] for i in lines]).tolist())
        self.assertIn("%d events applied" % n, r.stderr)
        self.assertIn("0 lines rejected", r.stderr)


if __name__ == "__main__":
    unittest.main()

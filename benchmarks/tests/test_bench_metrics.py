"""bench_metrics: the shared readers, means and formats."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import bench_metrics as bm
from tests.fixtures import test_line, write_manifest, write_run


class BenchMetricsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_cpu_model_reads_the_first_model_name(self):
        path = os.path.join(self.dir, "cpuinfo")
        with open(path, "w") as f:
            f.write("processor\t: 0\nModel Name\t: Fast CPU @ 3GHz \nmodel name\t: other\n")
        self.assertEqual(bm.cpu_model(path), "Fast CPU @ 3GHz")
        with open(path, "w") as f:
            f.write("processor\t: 0\n")
        self.assertIsNone(bm.cpu_model(path))

    def test_run_metrics_splits_epochs_from_tests(self):
        run = write_run(os.path.join(self.dir, "r"), [{"loss": 0.5}, {"loss": 0.25}],
                        test_line(2, 0.9, 0.8))
        epochs, tests = bm.run_metrics(run)
        self.assertEqual([e["loss"] for e in epochs], [0.5, 0.25])
        self.assertEqual([t["best_epoch"] for t in tests], [2])
        self.assertEqual(bm.run_metrics(os.path.join(self.dir, "missing")), ([], []))

    def test_run_device_parses_the_device_line(self):
        run = write_run(os.path.join(self.dir, "r"), [], device=("cuda:0", 8))
        self.assertEqual(bm.run_device(run), ("cuda:0", 8))
        self.assertIsNone(bm.run_device(os.path.join(self.dir, "missing")))

    def test_manifest_lines_skip_blank_lines(self):
        path = write_manifest(os.path.join(self.dir, "m.tsv"), [("a", 1, "x y"), ("b", 2, "")])
        with open(path, "a") as f:
            f.write("\n")
        self.assertEqual(bm.manifest_lines(path), [["a", "1", "x y"], ["b", "2", ""]])

    def test_known_mean_and_fixed(self):
        self.assertEqual(bm.known_mean([1.0, None, 2.0]), 1.5)
        self.assertIsNone(bm.known_mean([None]))
        self.assertEqual(bm.fixed(2.0 / 3.0, 3), "0.667")
        self.assertEqual(bm.fixed(1234.5, 0), "1234")
        self.assertEqual(bm.fixed(None, 2), "-")

    def test_write_json_replaces_the_file(self):
        out = os.path.join(self.dir, "out.json")
        with contextlib.redirect_stderr(io.StringIO()) as err:
            bm.write_json(out, {"a": [1, 2]}, "test")
        self.assertEqual(err.getvalue(), f"[test] wrote {out}\n")
        with open(out) as f:
            text = f.read()
        self.assertEqual(json.loads(text), {"a": [1, 2]})
        self.assertTrue(text.endswith("}\n"))
        self.assertFalse(os.path.exists(out + ".tmp"))


if __name__ == "__main__":
    unittest.main()

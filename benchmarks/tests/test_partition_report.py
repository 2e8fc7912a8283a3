"""partition_report: per-run means, depbloom against strict, the table."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import partition_report as pr
from tests.fixtures import comm, test_line, write_manifest, write_run


def epochs(secs, calls, nbytes, plan=None):
    extra = {"plan": plan} if plan else {}
    return [{"loss": 0.5 - 0.1 * i, "train_seconds": s,
             "comm": comm(calls, nbytes, sync_points=4, exchange_bytes=10.0 * calls, **extra)}
            for i, s in enumerate(secs)]


class PartitionReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        strict = write_run(f"{d}/strict", epochs([2.0, 4.0], 10, 100), test_line(2, 0.90, 0.80))
        metis = write_run(f"{d}/metis", epochs([1.0, 2.0], 5, 40, {"cut_fraction": 0.2}),
                          test_line(1, 0.92, 0.81))
        hashed = write_run(f"{d}/hash", epochs([1.0, 1.0], 8, 80, {"cut_fraction": 0.5}),
                           test_line(1, 0.91, 0.80))
        over = write_run(f"{d}/over", epochs([6.0], 20, 200), test_line(1, 0.9, 0.8))
        self.manifest = write_manifest(f"{d}/manifest.tsv", [
            ("wiki", 2, "strict", "-", 0, 1, strict, 0), ("wiki", 2, "depbloom", "metis", 0, 1, metis, 0),
            ("wiki", 2, "depbloom", "hash", 0, 1, hashed, 0), ("wiki", 4, "strict", "-", 0, 1, over, 0),
            ("wiki", 4, "depbloom", "fennel", 0, 1, f"{d}/failed", 7)])
        self.runs = [pr.summarise(f, 2) for f in pr.manifest_lines(self.manifest)]

    def tearDown(self):
        self.tmp.cleanup()

    def test_run_means_per_epoch(self):
        strict = self.runs[0]
        self.assertEqual(strict["train_seconds_per_epoch"], 3.0)
        self.assertEqual(strict["collectives_per_epoch"], 50)  # 5 kinds x 10 calls
        self.assertEqual(strict["bytes_per_epoch"], 500)
        self.assertEqual(strict["all_gather_v_bytes_per_epoch"], 100)
        self.assertEqual(strict["exchange_bytes_per_epoch"], 100.0)
        self.assertEqual(strict["final_loss"], 0.4)
        self.assertAlmostEqual(strict["test_ap_batch_mean"], 0.89)
        self.assertEqual(self.runs[1]["plan"], {"cut_fraction": 0.2})

    def test_oversubscribed_and_failed_runs(self):
        over, failed = self.runs[3], self.runs[4]
        self.assertTrue(over["oversubscribed"])
        self.assertIsNone(over["train_seconds_per_epoch"])
        self.assertEqual(over["oversubscribed_train_seconds_per_epoch"], 6.0)
        self.assertEqual(failed["exit_code"], 7)
        self.assertNotIn("epochs", failed)

    def test_summary_against_strict(self):
        s = pr.summary(self.runs)["wiki"]
        metis = s["2"]["metis"]
        self.assertEqual(metis["collectives_vs_strict"], 0.5)
        self.assertEqual(metis["all_gather_v_bytes_vs_strict"], 0.4)
        self.assertAlmostEqual(metis["test_ap_batch_mean_minus_strict"], 0.02)
        self.assertEqual(s["2"]["cut_fraction_metis_vs_hash"], 0.4)
        self.assertIsNone(s["4"]["fennel"]["collectives_vs_strict"])  # it failed

    def test_main_writes_json_and_table(self):
        out = os.path.join(self.tmp.name, "out.json")
        with contextlib.redirect_stdout(io.StringIO()) as table, \
                contextlib.redirect_stderr(io.StringIO()):
            pr.main([out, self.manifest, "2", "0", "2"])
        with open(out) as f:
            result = json.load(f)
        self.assertEqual(result["benchmark"], "partition")
        self.assertEqual(len(result["runs"]), 5)
        lines = table.getvalue().splitlines()
        self.assertEqual(len(lines), 7)
        self.assertEqual(lines[2], "| wiki | 2 | strict | - | 0 | 0.8900 | 0.7900 | 50 | 0.00 "
                                   "| 0.00 | - | - | - | 3.00 |")
        self.assertTrue(lines[5].endswith("| oversub. |"))
        self.assertTrue(lines[6].endswith("| - | oversub. (exit 7) |"))


if __name__ == "__main__":
    unittest.main()

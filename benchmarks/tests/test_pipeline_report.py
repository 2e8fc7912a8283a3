"""pipeline_report: medians off and on, the back-to-back pairs, the table."""
import os
import tempfile
import unittest

import pipeline_report as pr
from tests.fixtures import write_manifest, write_run


def epoch(train_s, loop_s):
    cp = {"loop_s": loop_s, "hidden_s": 0.5, "deferred_share": 0.25, "busy_s": {"side": 1.0},
          "side_wait_s": 0.1, "collective_wait_s": 0.0, "rows": 10}
    return [{"loss": 0.5, "train_seconds": train_s, "critical_path": cp, "val": {"ap": 0.9}}]


class PipelineReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        rows = []
        # repetition -> (off seconds, on seconds); repetition 2's "on" run failed
        for rep, (off, on) in enumerate(((10.0, 8.0), (12.0, 12.0), (9.0, None))):
            rows.append(("wiki", 2, rep, "false", write_run(f"{d}/off{rep}", epoch(off, off - 1)), 0))
            run = write_run(f"{d}/on{rep}", epoch(on, on - 2)) if on else f"{d}/on{rep}"
            rows.append(("wiki", 2, rep, "true", run, 0 if on else 1))
        self.manifest = write_manifest(f"{d}/manifest.tsv", rows)

    def tearDown(self):
        self.tmp.cleanup()

    def test_cell_medians_and_pairs(self):
        by = pr.read_runs(self.manifest)[("wiki", 2)]
        c = pr.cell("wiki", 2, by)
        self.assertEqual(c["strategy"], "depbloom")
        self.assertEqual(c["off"]["train_seconds"], 10.0)  # median of 10, 12, 9
        self.assertEqual(c["off"]["runs"], 3)
        self.assertEqual(c["on"]["train_seconds"], 10.0)  # median of 8, 12
        self.assertEqual(c["on"]["loop_s"], 8.0)
        self.assertEqual(c["on"]["runs"], 2)
        self.assertEqual(c["speed_ratio_on_vs_off"]["pairs"], [1.25, 1.0])
        self.assertEqual(c["speed_ratio_on_vs_off"]["median"], 1.125)
        self.assertTrue(c["speed_ratio_on_vs_off"]["no_slower"])
        self.assertEqual(c["runs"]["on"][2]["exit_code"], 1)

    def test_no_pairs_no_verdict(self):
        c = pr.cell("wiki", 1, {False: {0: {"run_dir": os.devnull, "exit_code": 1}}})
        self.assertEqual(c["strategy"], "single-device")
        self.assertIsNone(c["speed_ratio_on_vs_off"]["median"])
        self.assertIsNone(c["speed_ratio_on_vs_off"]["no_slower"])
        self.assertIsNone(c["off"]["train_seconds"])

    def test_table(self):
        c = pr.cell("wiki", 2, pr.read_runs(self.manifest)[("wiki", 2)])
        self.assertEqual(pr.table([c])[2], "| wiki | 2 | 10.0 | 10.0 | 1.125 | 8.0 | 0.500 | 0.250 |")


if __name__ == "__main__":
    unittest.main()

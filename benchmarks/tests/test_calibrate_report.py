"""calibrate_report: the profile's values from micro-benchmark output, the check's lines."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import calibrate_report as cr
import gpu_bench_profile as gp
from tests.fixtures import write_run


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


class CalibrateReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.dir = self.tmp.name
        write_json(f"{d}/gemm.json", {"benchmarks": [
            {"name": "a", "flops": 2e9}, {"name": "b", "run_type": "iteration", "flops": 6e9},
            {"name": "b_mean", "run_type": "aggregate", "flops": 1.0}]})
        write_json(f"{d}/memory.json", {"benchmarks": [
            {"name": "BM_Copy/64", "bytes": 5e9}, {"name": "BM_SmallOp", "real_time": 250.0}]})
        write_json(f"{d}/plan.json", {"benchmarks": [{"name": "BM_PlanPass", "planned/s": 1e6}]})
        with open(f"{d}/comm.jsonl", "w") as f:
            f.write("a log line\n")
            for kind in ("all_reduce", "all_gather_v"):
                for nbytes, secs in ((8, 1e-5), (1 << 19, 1e-4), (1 << 20, 1e-3 + 1e-5)):
                    f.write(json.dumps({"collective": kind, "bytes": nbytes, "seconds": secs}) + "\n")

    def tearDown(self):
        self.tmp.cleanup()

    def test_measured(self):
        v = cr.measured(self.dir)
        self.assertAlmostEqual(v["gflops"], 3.0)  # harmonic mean of 2 and 6 GFLOP/s
        self.assertEqual(v["copy_gbs"], 5.0)
        self.assertEqual(v["op_us"], 0.25)
        self.assertEqual(v["plan"], 1e6)
        self.assertAlmostEqual(v["ar_lat"], 10.0)
        self.assertAlmostEqual(v["ar_bw"], (1 << 20) * 1.0 / 1e-3 / 1e9)  # 2(P-1)/P = 1
        self.assertAlmostEqual(v["ag_bw"], (1 << 20) * 0.5 / 1e-3 / 1e9)

    def write_curve_run(self, model, batch, medians):
        write_run(f"{self.dir}/curve/{model}-b{batch}",
                  [{"stage_s": {}, "step_s": {"median": m}} for m in medians])

    def test_profile_file(self):
        self.write_curve_run("tgn", 1000, [9.0, 0.25])  # the warm (last) epoch's median
        self.write_curve_run("tgn", 200, [9.0, 0.0625])
        self.write_curve_run("jodie", 200, [9.0, 0.01])
        out = os.path.join(self.dir, "cpu-here.yaml")
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            cr.profile(self.dir, out, "1", "abc", "host", "60000")
        with open(out) as f:
            text = f.read()
        self.assertEqual(printed.getvalue(), text + "\n")
        self.assertIn("\ngemm_gflop_s: 3.000\n", text)
        self.assertIn("\nop_launch_us: 0.2500\n", text)
        self.assertIn("all_gather:\n  bandwidth_gb_s: 0.524\n  latency_us: 10.000\n", text)
        self.assertIn("first 60000 WIKI events", text)
        self.assertTrue(text.endswith(
            "step_curves:\n  jodie:\n    - {batch: 200, device_seconds: 0.01}\n"
            "  tgn:\n    - {batch: 200, device_seconds: 0.0625}\n"
            "    - {batch: 1000, device_seconds: 0.25}\n"))
        # The roofline alone: the same profile less the curves and their comment.
        roof = os.path.join(self.dir, "roofline.yaml")
        gp.without_curves(out, roof)
        with open(roof) as f:
            self.assertEqual(f.read(), text[:text.index("# Warm training steps")])

    def test_profile_without_curves(self):
        out = os.path.join(self.dir, "cpu-here.yaml")
        with contextlib.redirect_stdout(io.StringIO()):
            cr.profile(self.dir, out, "1", "abc", "host", "60000")
        with open(out) as f:
            self.assertNotIn("step_curves", f.read())

    def test_check_run(self):
        write_run(f"{self.dir}/single", [
            {"loss": 0.6, "train_seconds": 14.0, "stage_s": {"sample": 2.5}},
            {"loss": 0.5, "train_seconds": 10.0, "stage_s": {"sample": 2.0, "evaluation": 9.0}}])
        write_json(f"{self.dir}/single.plan.json", {"plan": {"flops": {"total": 5e10}, "model": {
            "epoch_seconds": {"serial": 12.0, "pipelined": 11.0}, "stages": {"sample": 3.0}}}})
        write_json(f"{self.dir}/single.roofline.json", {"plan": {"model": {
            "epoch_seconds": {"serial": 7.5, "pipelined": 7.0}}}})
        lines, err, row = cr.check_run(self.dir, "single")
        self.assertAlmostEqual(err, 0.2)
        self.assertEqual(lines, [
            "single: measured 10.00 s (epoch 2; the first, cold, 14.00 s), modelled 12.00 s "
            "(serial; pipelined 11.00 s), error +20.0%",
            "  roofline alone 7.50 s, error -25.0%",
            "  sample         measured    2.000 s  modelled    3.000 s  +50%",
            "  GFLOP/s achieved 5.00"])
        self.assertEqual(row, "| single | 10.00 | 12.00 | +20.0% | 7.50 | -25.0% |")


if __name__ == "__main__":
    unittest.main()

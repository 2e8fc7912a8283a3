"""gpu_bench_check: the held-out split, the fitted and roofline profiles, the plan's command
line and the rows, with the pricing replaced by a canned function."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import gpu_bench as gb
import gpu_bench_check as gc

PROFILE = """name: h100-measured
gemm_gflop_s: 1000
# the measured curves
step_curves:
  tgn:
    - {batch: 600, device_seconds: 0.002}
all_reduce:
  latency_us: 8.4
"""


def run(model, batch, median, train_seconds, **cfg):
    r = gb.train_config(model, "wiki", batch, **cfg)
    r.update(rc=0, step_s={"steps": 40, "median": median}, train_seconds=train_seconds,
             argv=["--config", f"configs/{model}-wiki.yaml", "--device", "cuda:0", "--out",
                   f"/runs/{model}-{batch}", "--set", f"train.batch_size={batch}"])
    return r


class GpuBenchCheckTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.profile = os.path.join(self.dir, "h100-measured.yaml")
        with open(self.profile, "w") as f:
            f.write(PROFILE)

    def tearDown(self):
        self.tmp.cleanup()

    def test_split_is_issue_32s(self):
        self.assertEqual(gc.split_batches("cuda"), ([600, 2400, 9600], [1200, 4800]))
        fit, held = gc.split_batches("cpu")
        self.assertTrue(fit and held and not set(fit) & set(held))

    def test_plan_argv(self):
        argv = gc.plan_argv(["--config", "c.yaml", "--device", "cuda:0", "--out", "/r",
                             "--set", "x=1"], "/b/depbloom-train", "/p.yaml")
        self.assertEqual(argv, ["/b/depbloom-train", "--config", "c.yaml", "--device", "cpu",
                                "--set", "x=1", "--plan", "--profile", "/p.yaml"])

    def test_profiles(self):
        fitted, roofline = gc.write_profiles(self.profile, {"tgn": [(600, 0.002), (2400, 0.005)]},
                                             self.dir)
        with open(roofline) as f:
            self.assertEqual(f.read(), "name: h100-measured\ngemm_gflop_s: 1000\n"
                                       "all_reduce:\n  latency_us: 8.4\n")
        with open(fitted) as f:
            text = f.read()
        self.assertIn("\nstep_curves:\n  tgn:\n    - {batch: 600, device_seconds: 0.002}\n"
                      "    - {batch: 2400, device_seconds: 0.005}\n", text)
        self.assertEqual(text.count("step_curves:"), 1)

    def test_rows_price_the_held_out_runs(self):
        records = [run("tgn", b, 0.001 * b / 600, 0.04 * b / 600)
                   for b in (600, 1200, 2400, 4800, 9600)]
        records.append(run("tgn", 1200, 1.0, 9.0, tf32=True))  # not a curve run
        records.append(dict(run("jodie", 1200, 1.0, 2.0), rc=1))  # failed
        priced = []

        def price(argv, train, profile, cwd):
            priced.append((argv[argv.index("--set") + 1], os.path.basename(profile)))
            with open(profile) as f:
                curve = "step_curves" in f.read()
            batch = int(argv[-1].split("=")[1])
            return {"pipelined": 0.05 * batch / 600 if curve else 0.02 * batch / 600}

        rows = gc.check({"device": "cuda", "records": records}, self.profile, "/b/t", self.dir,
                        price=price)
        self.assertEqual([(r["model"], r["batch"]) for r in rows], [("tgn", 1200), ("tgn", 4800)])
        self.assertAlmostEqual(rows[0]["error"], 0.25)
        self.assertAlmostEqual(rows[1]["roofline_error"], -0.5)
        self.assertEqual(rows[0]["fitted_on"], [600, 2400, 9600])
        self.assertEqual(len(priced), 4)
        with open(os.path.join(self.dir, "fitted.yaml")) as f:
            fitted = f.read()
        self.assertNotIn("batch: 1200", fitted)
        self.assertIn("{batch: 9600, device_seconds: 0.016}", fitted)
        self.assertIn("| tgn | 1200 | 40 | 0.0800 | 0.1000 | +25.0% | 0.0400 | -50.0% |",
                      gc.table(rows))

    def test_main_without_held_out_runs(self):
        path = os.path.join(self.dir, "bench.json")
        with open(path, "w") as f:
            json.dump({"device": "cuda", "records": []}, f)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            rc = gc.main([path, self.profile, "--bin", "/none", "--out", self.dir])
        self.assertEqual(rc, 2)
        self.assertIn("nothing to check", out.getvalue())
        with open(os.path.join(self.dir, "check.json")) as f:
            self.assertIsNone(json.load(f)["worst_error"])


if __name__ == "__main__":
    unittest.main()

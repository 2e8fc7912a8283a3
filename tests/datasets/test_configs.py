"""The configs for real and synthetic datasets, each parsed and planned (--plan) against a
small fixture of its dataset's format written here, and the missing synthetic folder's
message. DEPBLOOM_TRAIN and DEPBLOOM_DATA_TOOL name the binaries; DEPBLOOM_SOURCE the tree.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

TRAIN = os.environ.get("DEPBLOOM_TRAIN", "build/depbloom-train")
TOOL = os.environ.get("DEPBLOOM_DATA_TOOL", "build/depbloom-data")
SOURCE = os.environ.get("DEPBLOOM_SOURCE", os.getcwd())

# The real datasets' configs: the file `depbloom-data get` writes, its format and width.
REAL = {
    "reddit": ("data/reddit/reddit.csv", "jodie", 172),
    "mooc": ("data/mooc/mooc.csv", "jodie", 4),
    "lastfm": ("data/lastfm/lastfm.csv", "jodie", 0),
    "wikitalk": ("data/wikitalk/wiki-talk-temporal.txt", "snap", 0),
}


def jodie_fixture(path, events, width):
    with open(path, "w") as f:
        f.write("user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n")
        for i in range(events):
            feats = "".join(",%.2f" % (((i + k) % 9) / 9.0) for k in range(width))
            f.write("%d,%d,%d,%d%s\n" % (i % 29, (i * 7) % 11, 3 * i, int(i % 50 == 0), feats))


def snap_fixture(path, events):
    with open(path, "w") as f:
        for i in range(events):
            f.write("%d %d %d\n" % (i % 31, (i * 5 + 1) % 37, 1000 + 3 * i))


class ConfigsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="depbloom-configs-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def plan(self, config, data, cwd=None):
        r = subprocess.run([TRAIN, "--config", config, "--plan", "--device", "cpu",
                            "--data", data], capture_output=True, text=True, timeout=120,
                           cwd=cwd or SOURCE)
        self.assertEqual(r.returncode, 0, "%s: %s" % (config, r.stderr[-2000:]))
        line = r.stdout.strip().splitlines()[-1]
        self.assertIn("plan", json.loads(line))
        return r

    def test_real_dataset_configs_plan_on_fixtures(self):
        for name, (path, fmt, width) in REAL.items():
            fixture = os.path.join(self.tmp, name, os.path.basename(path))
            os.makedirs(os.path.dirname(fixture), exist_ok=True)
            if fmt == "jodie":
                jodie_fixture(fixture, 400, width)
            else:
                snap_fixture(fixture, 400)
            for model in ("tgn", "jodie", "apan"):
                config = os.path.join(SOURCE, "configs", "%s-%s.yaml" % (model, name))
                with self.subTest(config=config):
                    with open(config) as f:
                        text = f.read()
                    self.assertIn("path: " + path, text)
                    self.assertIn("depbloom-data get " + name, text)
                    self.plan(config, fixture)

    def test_synthetic_configs_name_the_width_and_plan(self):
        configs = sorted(glob.glob(os.path.join(SOURCE, "configs", "*-synth-*.yaml")))
        self.assertGreaterEqual(len(configs), 9)
        made = {}
        for config in configs:
            with open(config) as f:
                path = re.search(r"\n  path: (\S+)\n", f.read()).group(1)
            named = re.fullmatch(r"data/synth/(wiki|reddit|wikitalk)-s[0-9.]+-f(\d+)", path)
            self.assertIsNotNone(named, "%s: %s does not name shape, scale and width"
                                 % (config, path))
            like, width = named.group(1), int(named.group(2))
            self.assertEqual(width, 0 if like == "wikitalk" else 172, config)
            if like not in made:
                out = os.path.join(self.tmp, "synth", "%s-s0.01-f%d" % (like, width))
                r = subprocess.run([TOOL, "synth", "--like", like, "--scale", "0.01", "-o", out],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(os.path.join(out, "meta.json")) as f:
                    self.assertEqual(json.load(f)["edge_dim"], width)
                made[like] = out
            with self.subTest(config=config):
                self.plan(config, made[like])

    def test_missing_synthetic_folder_names_the_command(self):
        config = os.path.join(SOURCE, "configs", "tgn-synth-reddit.yaml")
        r = subprocess.run([TRAIN, "--config", config, "--plan", "--device", "cpu"],
                           capture_output=True, text=True, timeout=60, cwd=self.tmp)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("data/synth/reddit-s0.1-f172: no such file or folder; make it with "
                      "`depbloom-data synth --like reddit --scale 0.1 --seed 0 "
                      "--edge-features 172 -o data/synth/reddit-s0.1-f172`", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()

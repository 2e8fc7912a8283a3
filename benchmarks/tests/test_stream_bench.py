"""stream_bench: the input it writes (queries before each event, the positive first) and
the summary line it parses."""
import os
import tempfile
import unittest

import stream_bench as sb

LINE = ("[12:00:00.000] [info] depbloom-stream: 23621 events applied in 119 batches "
        "(119 one-pass) in 12.500 s: 1890 events/s; 47242 queries answered, latency p50 "
        "40.125 ms, p99 80.500 ms; 0 lines rejected; 0 new nodes")


class StreamBenchTest(unittest.TestCase):
    def test_each_event_follows_its_positive_and_negatives(self):
        events = ["1,10,5.0,0", "2,11,6.0,0"]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "in.csv")
            sb.write_input(path, events, 2, seed=3)
            lines = open(path).read().splitlines()
        self.assertEqual(len(lines), 2 * (1 + 2 + 1))
        self.assertEqual(lines[0], "?,1,10,5.0")
        for q in lines[1:3]:
            src, dst, t = q.split(",")[1:]
            self.assertEqual((src, t), ("1", "5.0"))
            self.assertIn(dst, ("10", "11"))
        self.assertEqual(lines[3], events[0])
        self.assertEqual(lines[7], events[1])

    def test_summary_fields(self):
        s = sb.summary(LINE)
        self.assertEqual(s["events"], 23621)
        self.assertEqual(s["one_pass_batches"], 119)
        self.assertEqual(s["events_per_s"], 1890)
        self.assertAlmostEqual(s["latency_p99_ms"], 80.5)

    def test_no_summary_is_an_error(self):
        with self.assertRaises(SystemExit):
            sb.summary("nothing here")


if __name__ == "__main__":
    unittest.main()

"""Unit tests of the benchmark reports (benchmarks/*_report.py), on synthetic run folders:
python3 -m unittest discover -s benchmarks/tests -t benchmarks (ctest: BenchmarksPython)."""

"""Running a run (run/), judging (judge/), the run folder (record/), metrics (metrics/), reports
(report/), the seed papers' tables (papers/), the command (cli/) and benchmarks (bench/)."""

"""``python -m memharness.eval.report``: the path from before eval/ had rooms (an alias for one
release); the report is ``memharness report`` / ``python -m memharness.eval.report.comparison``."""

import sys

from memharness.eval.report.comparison import main

sys.stderr.write(
    "note: memharness.eval.report is now memharness.eval.report.comparison (or: memharness "
    "report); the old path is an alias until the next release\n"
)
main()

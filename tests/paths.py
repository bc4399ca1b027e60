"""Where the tests find the repository, their fixtures and their configs, from any tests/ subfolder."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent  # tests/: shared helpers, fixtures/, conf/
ROOT = TESTS.parent  # the repository
FIXTURES = TESTS / "fixtures"

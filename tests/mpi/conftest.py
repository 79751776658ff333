"""Multi-process runs: a clean runtime environment per test (children get their runtime
directory under it)."""

from tests.runtime_env import runtime_env  # noqa: F401  (autouse in this folder)

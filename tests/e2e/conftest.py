"""Whole models and programs on the runtime: a clean runtime environment per test."""

from tests.runtime_env import runtime_env  # noqa: F401  (autouse in this folder)

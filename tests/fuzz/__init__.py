"""Fuzzing kept in the repository: structured mutations of every input kind the toolchain
reads, run through the CLI in this process (`python -m tests.fuzz --help`)."""

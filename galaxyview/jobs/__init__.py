"""Headless jobs behind the command line (run, accuracy): no Qt, no argument parsing.

Each job takes plain values and a progress callback and returns a result dataclass with
`as_dict()` for --json output.
"""

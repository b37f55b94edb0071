"""Graders for the Python coding tasks; each module exposes ``grade(task, code, sandbox) -> Verdict``."""

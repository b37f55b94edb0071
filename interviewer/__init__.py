"""A mock interviewer for ML engineer loops: rubric-backed questions, why-follow-ups, sandboxed code checks."""

__version__ = "0.1.0"

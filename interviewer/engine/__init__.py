"""The interview engine: a fold over the session's events, split by job (see interview.py for the map)."""

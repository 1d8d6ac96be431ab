"""Shared test helpers (imported by the tests; fixtures live in conftest.py)."""

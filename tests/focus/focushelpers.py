"""Helpers the focus tests import by name (a module named ``conftest`` is ambiguous: pytest
loads one per test directory, and ``from conftest import`` got whichever came first)."""
from datetime import datetime

NOW = datetime(2024, 1, 1, 12, 0, 0)


def as_dict(df, key="url", value="score"):
    return {r[key]: r[value] for r in df.collect()}

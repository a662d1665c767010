"""pyflakes' checks (through ruff, configured in pyproject.toml) over the code and the tests.

Some paths cannot run on every machine (the GraphFrames engine needs a jar Maven Central
does not serve here, so its tests skip): an undefined name there would reach users unseen.
An import left behind after a refactoring is caught the same way."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _ruff() -> list[str]:
    """ruff from this environment (the test extra installs it)."""
    found = shutil.which("ruff", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("ruff is not installed: scripts/setup.sh installs the test extra")
    return [found]


def test_pyflakes_finds_nothing_in_the_code_and_tests():
    result = subprocess.run(_ruff() + ["check", "--no-cache", "--output-format", "concise",
                                       "crawlkit", "jobs", "scripts", "tests"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_check_reports_an_undefined_name(tmp_path):
    """The configuration does select the check that would have caught a dropped import."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    return node_set()\n")
    result = subprocess.run(_ruff() + ["check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad)],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 1 and "F821" in result.stdout

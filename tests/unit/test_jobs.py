"""jobs/: one spark-submit entry point per stage, each running that stage of the CLI."""
import ast
from pathlib import Path

from crawlkit.cli import STAGES

JOBS = Path(__file__).resolve().parents[2] / "jobs"
# commands that are not Spark jobs of a crawl: the replay web, and the inspection helpers
NOT_JOBS = {"replay", "report", "top", "dump"}


def test_every_stage_has_a_job_that_runs_it():
    for path in JOBS.glob("*.py"):
        called = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.List)]
        assert called and called[0].elts[0].value == path.stem, path   # main(["<stage>", *argv])
    missing = set(STAGES) - NOT_JOBS - {p.stem for p in JOBS.glob("*.py")}
    assert not missing, f"stages without a jobs/<stage>.py: {sorted(missing)}"

"""schemas/ declares every table once, and only tables the code writes through it."""
import re
from pathlib import Path

from crawlkit import schemas

ROOT = Path(__file__).resolve().parents[2]
# the calls that put rows in a declared table's shape (or read them in it)
USES = r"\b(?:conform|struct|ensure_table|read_table|write_segment_part|read_segment_part|frame)\([^)]*\"{table}\""


def test_every_declared_table_is_used_by_the_code_under_its_name():
    code = "\n".join(p.read_text() for p in (ROOT / "crawlkit").rglob("*.py"))
    declared = sorted(p.stem for p in (ROOT / "schemas").glob("*.json"))
    assert {"crawldb", "links", "fetchlist", "content", "parse", "boosts", "deletes"} <= set(declared)
    unused = [t for t in declared if not re.search(USES.format(table=re.escape(t)), code)]
    assert unused == []   # a declaration nothing follows documents a table that does not exist
    for table in declared:
        assert schemas.declaration(table)["table"] == table

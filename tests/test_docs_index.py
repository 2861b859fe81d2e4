"""docs/README.md indexes every docs page and measurement log, and its links resolve."""
from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_page_is_indexed_and_every_link_resolves():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    links = set(re.findall(r"\]\(([^)#]+\.md)\)", index))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - {"README.md"}
    assert pages - links == set(), "pages missing from docs/README.md: add a line for each"
    assert {link for link in links if not (DOCS / link).is_file()} == set()


def test_measurement_logs_are_dated():
    for log in (DOCS / "measurements").glob("*.md"):
        assert re.match(r"\d{4}-\d{2}-", log.name), f"{log.name}: name a log YYYY-MM-topic.md"

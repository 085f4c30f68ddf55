"""The docs index and the README point at documents that exist, and list every one."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
LINK = re.compile(r"\]\(([^)#]+)(?:#[^)]*)?\)")


def _rows(index: str) -> dict[str, str]:
    """Index table rows: linked file name -> status cell."""
    rows = {}
    for line in index.splitlines():
        m = re.match(r"\|\s*\[[^\]]+\]\(([^)]+)\)\s*\|.*\|\s*([^|]+?)\s*\|\s*$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_every_document_is_in_the_index() -> None:
    rows = _rows((DOCS / "README.md").read_text())
    docs = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    missing = docs - rows.keys()
    assert not missing, f"docs/README.md does not list: {sorted(missing)}"


def test_documents_marked_written_exist() -> None:
    rows = _rows((DOCS / "README.md").read_text())
    assert rows, "the index has a table of documents"
    for name, status in rows.items():
        assert status in ("written", "being written"), f"{name}: unknown status {status!r}"
        if status == "written":
            assert (DOCS / name).is_file(), f"docs/README.md says {name} is written, but it is missing"


def test_readme_links_resolve_or_are_announced_in_the_index() -> None:
    readme = (REPO / "README.md").read_text()
    rows = _rows((DOCS / "README.md").read_text())
    for target in LINK.findall(readme):
        if "://" in target:
            continue
        path = REPO / target
        if path.exists():
            continue
        assert target.startswith("docs/") and rows.get(target[5:]) == "being written", (
            f"README links {target}, which neither exists nor is announced in docs/README.md"
        )

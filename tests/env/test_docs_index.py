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


FENCE = re.compile(r"^```.*?^```", re.S | re.M)
ANY_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", FENCE.sub("", text), re.M)}


def test_links_between_documents_resolve_to_files_and_headings() -> None:
    broken = []
    for doc in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        for target in ANY_LINK.findall(FENCE.sub("", doc.read_text())):
            if "://" in target or target.startswith("mailto:"):
                continue
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path) if path else doc
            if not dest.exists():
                broken.append(f"{doc.relative_to(REPO)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text()):
                broken.append(f"{doc.relative_to(REPO)}: {target} (no heading '{anchor}' in {path or doc.name})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_documents_cite_no_issue_numbers_and_nothing_outside_the_repository() -> None:
    cites = re.compile(r"\bissues? ?#?\d+|DESIGN\.md|shared notes", re.I)
    found = [f"{doc.relative_to(REPO)}:{n}: {line.strip()}"
             for doc in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
             for n, line in enumerate(doc.read_text().splitlines(), 1) if cites.search(line)]
    assert not found, "documents must stand on their own:\n" + "\n".join(found)

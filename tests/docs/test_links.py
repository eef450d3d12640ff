"""The project's documents name nothing outside the repository, and every relative link in them resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CODE_SPAN = re.compile(r"`[^`\n]*`")


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_document_names_a_path_outside_the_repository(document: Path) -> None:
    assert "../" not in document.read_text()


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(document: Path) -> None:
    for target in LINK.findall(CODE_SPAN.sub("", document.read_text())):
        if re.match(r"^[a-z]+:", target):
            continue
        resolved = (document.parent / target).resolve()
        assert resolved.is_relative_to(ROOT) and resolved.exists(), target


def test_the_readme_points_at_the_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    for document in ("docs/architecture.md", "docs/configuration.md", "CONTRIBUTING.md"):
        assert f"]({document})" in readme

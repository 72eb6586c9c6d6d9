# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The README's module table and the Layout of docs/development.md name every module, filter, role and module_utils
file there is: a new one that is not documented fails here."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LAYOUT = (ROOT / "docs" / "development.md").read_text(encoding="utf-8").split("## Layout", 1)[-1]
MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py"))
FILTERS = sorted(p.stem for p in (ROOT / "plugins" / "filter").glob("*.yml"))
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if p.is_dir())
MODULE_UTILS = sorted(p.relative_to(ROOT / "plugins" / "module_utils") for p in (ROOT / "plugins" / "module_utils").rglob("*.py")
                      if p.name != "__init__.py")


def _named(text, name):
    return re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % re.escape(name), text) is not None


def test_the_layout_section_is_there():
    assert "plugins/" in LAYOUT and "roles/" in LAYOUT


@pytest.mark.parametrize("name", MODULES)
def test_every_module_is_in_the_readme_table_and_the_layout(name):
    assert "| `%s` |" % name in README, "README's module table lacks %s" % name
    assert _named(LAYOUT, name), "docs/development.md's Layout lacks the module %s" % name


@pytest.mark.parametrize("name", FILTERS)
def test_every_filter_is_in_the_layout(name):
    assert _named(LAYOUT, name), "docs/development.md's Layout lacks the filter %s" % name


@pytest.mark.parametrize("name", ROLES)
def test_every_role_is_in_the_layout(name):
    assert _named(LAYOUT, name), "docs/development.md's Layout lacks the role %s" % name


@pytest.mark.parametrize("path", MODULE_UTILS, ids=[str(p) for p in MODULE_UTILS])
def test_every_module_utils_file_is_in_the_layout(path):
    assert _named(LAYOUT, path.stem), "docs/development.md's Layout lacks module_utils/%s" % path


DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "roles").glob("*/README.md"),
               *(ROOT / "extensions" / "molecule").glob("*/README.md")])


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_test_file_a_document_names_is_there(doc):
    """A test moved in a reshape leaves its old path in the READMEs unless something reads them (two roles' did)."""
    named = set(re.findall(r"(?<![\w/.-])(tests/[\w/.-]+\.(?:py|yml))(?![\w/])", doc.read_text(encoding="utf-8")))
    assert sorted(path for path in named if not (ROOT / path).is_file()) == []

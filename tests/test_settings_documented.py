"""Every setting is in the README's settings table, under its environment variable."""

from __future__ import annotations

from interviewer.config import Settings
from tests.conftest import REPO


def _settings_table() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("| setting (env var) |")
    return readme[start : readme.index("\n\n", start)]


def test_every_setting_has_a_row_in_the_readme_table() -> None:
    table = _settings_table()
    missing = [n for n in Settings.model_fields if f"`INTERVIEWER_{n.upper()}`" not in table]
    assert missing == [], f"settings without a row in README.md's table: {missing}"

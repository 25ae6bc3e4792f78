"""The docs hold what the code cites: every numbered rule, every file.

The engine's docstrings and the rules tests cite the rules by number ("rule 4"); each of
those numbers must be a rule of docs/rules.md. And no Markdown or Python file of the
repository may cite a file the repository does not hold.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "rules.md"


def _numbered_rules() -> set[int]:
    return {int(n) for n in re.findall(r"^## Rule (\d+): ", RULES.read_text(encoding="utf-8"), flags=re.M)}


def _cited_rules() -> dict[int, list[str]]:
    """Rule numbers cited in the engine's package and the rules tests, with where."""
    cited: dict[int, list[str]] = {}
    files = sorted((ROOT / "llama_env").glob("*.py")) + sorted((ROOT / "tests" / "rules").glob("*.py"))
    for path in files:
        text = path.read_text(encoding="utf-8")
        # "rule 4", "Rule 9:", and ranges such as "Rules 8-12"
        for m in re.finditer(r"\b[Rr]ules? (\d+)(?:-(\d+))?\b", text):
            first, last = int(m.group(1)), int(m.group(2) or m.group(1))
            line = text.count("\n", 0, m.start()) + 1
            for n in range(first, last + 1):
                cited.setdefault(n, []).append(f"{path.relative_to(ROOT)}:{line}")
    return cited


def test_rules_are_numbered_one_to_twelve() -> None:
    assert _numbered_rules() == set(range(1, 13))


def test_every_cited_rule_is_in_docs_rules_md() -> None:
    cited = _cited_rules()
    assert cited, "no rule citations found: the pattern no longer matches the code"
    missing = {n: where for n, where in cited.items() if n not in _numbered_rules()}
    assert not missing, f"rules cited but not in docs/rules.md: {missing}"

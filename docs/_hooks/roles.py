"""A MkDocs hook for the API reference: the docstrings name other objects with Sphinx's
roles (:class:`LlamaGame`, :func:`~llama_env.table.seat_positions`), which the Markdown of
mkdocstrings shows as they are written. Each becomes the object's name in code, linked to
its entry where the reference has one (a dotted name), as the role means."""

from __future__ import annotations

import re
from typing import Any

# After Markdown, :class:`X` reads :class:<code>X</code>, and :meth:`title <X>` reads
# :meth:<code>title &lt;X&gt;</code>.
_ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):<code>"
    r"(?:(?P<title>[^<]+?) &lt;(?P<target>[\w.]+)&gt;|(?P<short>~?)(?P<name>[\w.]+)(?P<call>\(\))?)</code>"
)


def _link(match: re.Match[str]) -> str:
    if match["target"]:
        name, shown = match["target"], match["title"]
    else:
        name = match["name"]
        shown = (name.rsplit(".", 1)[-1] if match["short"] else name) + (match["call"] or "")
    return f'<autoref identifier="{name}" optional><code>{shown}</code></autoref>'


def on_page_content(html: str, **_: Any) -> str:
    """Roles turned into code, linked where mkdocs-autorefs knows the name."""
    return _ROLE.sub(_link, html)

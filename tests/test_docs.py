"""The docs hold what the code cites: every numbered rule, every file, the contract.

The engine's docstrings and the rules tests cite the rules by number ("rule 4"); each of
those numbers must be a rule of docs/rules.md. docs/env.md's tables match the code (its
examples run in tests/test_docs_snippets.py, with every doc's). And no Markdown or Python
file of the repository may cite a file the repository does not hold (a Markdown link, or
a backticked path to a .md, .py, .ipynb, .toml, .json or .png file), least of all the
SPEC.md the rules once lived in. Nor may a table or a list under docs/ start right under a
paragraph's line, where the site prints it as raw text.
"""

from __future__ import annotations

import functools
import html
import re
from pathlib import Path
from typing import Any

import pytest

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


# ------------------------------------------------------------- the contract, docs/env.md

ENV = (ROOT / "docs" / "env.md").read_text(encoding="utf-8")


def test_observation_table_matches_fields() -> None:
    from llama_env.observation import FIELDS, OBS_SIZE, SLICES

    rows = re.findall(r"^\| `(\w+)` \| (\d+)\.\.(\d+) \| (\d+) \| (.+?) \|$", ENV, flags=re.M)
    table = {name: (int(a), int(b), int(size), doc) for name, a, b, size, doc in rows if name in SLICES}
    assert list(table) == [f.name for f in FIELDS]
    for f in FIELDS:
        start, stop, size, doc = table[f.name]
        assert (start, stop + 1, size) == (SLICES[f.name].start, SLICES[f.name].stop, f.size), f.name
        assert doc == f.doc, f.name
    assert f"one float32 vector of {OBS_SIZE} entries" in ENV


def test_history_table_matches_the_version_1_fields() -> None:
    from llama_env.observation import HISTORY_FIELDS, OBS_SIZE_V1, SLICES_V1

    section = ENV.split("## Observation, version 1")[1].split("\n## ")[0]
    rows = re.findall(r"^\| `(\w+)` \| (\d+)\.\.(\d+) \| (\d+) \| (.+?) \|$", section, flags=re.M)
    assert [r[0] for r in rows] == [f.name for f in HISTORY_FIELDS]
    for (name, a, b, size, doc), f in zip(rows, HISTORY_FIELDS, strict=True):
        assert (int(a), int(b) + 1, int(size)) == (SLICES_V1[name].start, SLICES_V1[name].stop, f.size), name
        assert doc == f.doc, name
    assert f"{OBS_SIZE_V1} entries in all" in section


def test_llama_v0_arguments_table_matches_the_env() -> None:
    import inspect

    from llama_env.gym_env import LlamaEnv

    section = ENV.split('`gym.make("Llama-v0", ...)` takes these keyword arguments')[1].split("\n\n")[1]
    rows = re.findall(r"^\| (`[^|]+`) \| (`[^|]+`) \|", section, flags=re.M)
    params = inspect.signature(LlamaEnv).parameters
    documented = {}
    for names, defaults in rows:
        for name, default in zip(re.findall(r"`(\w+)`", names), re.findall(r"`([^`]+)`", defaults), strict=True):
            documented[name] = default
    assert set(documented) == set(params)
    for name, default in documented.items():
        assert repr(params[name].default) == default.replace('"', "'"), name


# ------------------------------------------------------------- no citation of a missing file

SKIP_DIRS = {".venv", ".git", "build", "node_modules", "llama_rl.egg-info", "runs"}
CHECKED_SUFFIXES = (".md", ".py", ".ipynb", ".toml", ".json", ".png")
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
TICKED = re.compile(r"`+([\w./-]+\.(?:md|py|ipynb|toml|json|png))`+")
# a path into one of the repository's folders, written out without backticks
PLAIN = re.compile(
    r"(?<![\w/.`-])((?:llama_env|agents|train|tests|benchmarks|docs|notebooks)/[\w./-]*\w\.(?:md|py|ipynb|toml|png))"
)
SCANNED_SUFFIXES = (".md", ".py", ".toml", ".yml", ".yaml", ".cfg", ".ipynb")


def _repo_files() -> list[Path]:
    return [
        p
        for p in sorted(ROOT.rglob("*"))
        if (p.suffix in SCANNED_SUFFIXES or p.name == "Makefile")
        and p.is_file()
        and not SKIP_DIRS.intersection(p.relative_to(ROOT).parts)
    ]


def _names_in_repo() -> set[str]:
    return {p.name for p in ROOT.rglob("*") if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(ROOT).parts)}


def _exists(target: str, citing: Path) -> bool:
    """The file is in the repository, from its root or from the citing file's folder: an
    absolute path, or one going up out of the repository, names a file its readers lack."""
    return any(p.exists() and p.resolve().is_relative_to(ROOT) for p in (ROOT / target, citing.parent / target))


def _is_placeholder(target: str) -> bool:
    """Paths that name what a user's run makes, or a pattern, rather than a file of ours
    (``~`` and ``$`` start a path on the user's machine). An absolute path is not one: it
    names a file on the writer's machine (a note once cited its scripts in /tmp)."""
    return (
        any(c in target for c in "<>*{}")
        or "..." in target
        or target.startswith(("runs/", "~", "$"))
        or "://" in target
        or target.startswith(("mailto:", "#"))
    )


def _is_history(path: Path) -> bool:
    """The changelog and the research log record files as they were, removed ones too
    (with the commit that holds them); this file names missing ones to test the check."""
    rel = path.relative_to(ROOT)
    return rel.name == "CHANGELOG.md" or rel.parts[:2] == ("docs", "research") or path == Path(__file__).resolve()


def _missing_citations() -> list[str]:
    names = _names_in_repo()
    missing = []
    for path in _repo_files():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        for m in LINK.finditer(text) if path.suffix == ".md" else ():
            target = m.group(1).split("#")[0]
            if target and not _is_placeholder(m.group(1)) and not _exists(target, path):
                missing.append(f"{where}:{text.count(chr(10), 0, m.start()) + 1}: link to {target}")
        for m in TICKED.finditer(text):
            target = m.group(1)
            if _is_placeholder(target) or not target.endswith(CHECKED_SUFFIXES):
                continue
            if "/" in target:
                ok = _exists(target, path)
            else:  # a bare file name: some file of the repository has it (run outputs such as config.json aside)
                ok = target.endswith(".json") or target in names
            if not ok:
                missing.append(f"{where}:{text.count(chr(10), 0, m.start()) + 1}: cites {target}")
        for m in PLAIN.finditer(text) if not _is_history(path) else ():
            if not _is_placeholder(m.group(1)) and not (ROOT / m.group(1)).exists():
                missing.append(f"{where}:{text.count(chr(10), 0, m.start()) + 1}: names {m.group(1)}")
    return missing


def test_no_file_cites_a_file_the_repository_lacks() -> None:
    missing = _missing_citations()
    assert not missing, "citations of files that are not in the repository:\n" + "\n".join(missing)


def test_nothing_cites_spec_md_or_the_style_guide() -> None:
    """The rules once lived in a SPEC.md outside the repository; they are docs/rules.md now.
    The team's style guide is not in the repository either: a file states the principle it
    follows instead of citing the guide's numbers."""
    hits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in _repo_files()
        if p != Path(__file__).resolve()
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bSPEC(\.md|'s|\b section)|\bSTYLE(\.md|'s|\b principle)", line)
    ]
    assert not hits, f"these cite SPEC.md or STYLE.md, which the repository does not hold: {hits}"


def test_the_citation_check_catches_a_missing_file(tmp_path: Path) -> None:
    """The checker itself: a link and a backticked path to files that do not exist are caught."""
    doc = ROOT / "docs" / "rules.md"
    assert _exists("docs/rules.md", doc) and _exists("env.md", doc)
    assert not _exists("docs/nowhere.md", doc)
    assert LINK.search("see [x](nowhere.md#a)").group(1) == "nowhere.md#a"
    missing = "llama_env/" + "nowhere.py"  # split, so that this file does not cite it
    assert TICKED.search(f"see ``{missing}``").group(1) == missing
    assert PLAIN.search(f"as {missing} assumes").group(1) == missing
    assert PLAIN.search(f"see `{missing}`") is None  # backticked: TICKED's
    assert _is_placeholder("runs/<name>/config.json") and not _is_placeholder("docs/rules.md")


def test_the_citation_check_catches_a_file_outside_the_repository(tmp_path: Path) -> None:
    """A research note cited its one-off scripts in /tmp: every path starting with / passed
    as a placeholder, so a file no reader has was never flagged."""
    doc = ROOT / "docs" / "rules.md"
    outside = tmp_path / "belief.py"
    outside.write_text("")  # even where it exists on this machine
    assert TICKED.search(f"see `{outside}`").group(1) == str(outside)
    assert not _is_placeholder(str(outside)) and not _exists(str(outside), doc)
    up = Path(*[".."] * len(doc.parent.parts), *outside.parts[1:])  # out of the repository, relatively
    assert (doc.parent / up).exists() and not _exists(up.as_posix(), doc)
    assert _is_placeholder("~/.local/share/llama-rl/history.sqlite3")  # the user's machine


def test_the_test_command_builds_the_site_strictly_with_its_warnings_heard() -> None:
    """``--quiet`` silences the warnings ``--strict`` turns into a failure (a page left out
    of the site's menu, a broken link): ``make test`` ran it so, and a research note left
    out of the menu passed."""
    for where in ("Makefile", "README.md"):
        builds = re.findall(r"mkdocs build[^\n]*", (ROOT / where).read_text(encoding="utf-8"))
        assert builds, where
        for command in builds:
            assert "--strict" in command and "--quiet" not in command and " -q" not in command, (where, command)


def test_the_readme_by_hand_runs_what_make_test_runs() -> None:
    """The README's "by hand, the same thing" is ``make test``'s recipe: the folders ruff
    checks grew (``docs/_hooks``, the notebooks) in the Makefile while the README's line
    stayed as it was. The recipe's ``$(BIN)/`` and ``$(CHECKED)`` (the folders) read as
    make expands them."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^test:[^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.M)
    assert recipe, "Makefile has no test recipe"
    checked = re.search(r"^CHECKED := ([^\n]+)$", makefile, re.M)
    assert checked, "Makefile has no CHECKED"
    made = [
        line.strip().replace("$(BIN)/", ".venv/bin/").replace("$(CHECKED)", checked.group(1).strip())
        for line in recipe.group(1).splitlines()
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    by_hand = readme[readme.index("By hand, the same thing") :]
    block = by_hand[by_hand.index("```bash\n") + 8 : by_hand.index("\n```", by_hand.index("```bash"))]
    assert block.splitlines()[1:] == made, "README's by-hand commands differ from make test's"


def test_the_readme_installs_the_site_tools_the_dev_extra_names() -> None:
    """The README's short install for building the site names the dev extra's mkdocs,
    mkdocstrings and griffelib requirements as pyproject.toml does: the dev extra's
    floors rose (an older Griffe skips the docs' hooks without a word) and the README's
    command still asked for mkdocstrings 0.26."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    dev = re.search(r"^dev = \[\n(.*?)^\]", pyproject, flags=re.S | re.M)  # no tomllib on 3.10
    assert dev, "pyproject.toml has no dev extra"
    tools = [r for r in re.findall(r'^\s*"([^"]+)"', dev.group(1), flags=re.M) if r.startswith(("mkdocs", "griffelib"))]
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    command = readme[readme.index("`pip install -e . ") : readme.index("`, then `mkdocs serve`")]
    assert tools and sorted(re.findall(r'"([^"]+)"', command)) == sorted(tools), command


# ------------------------------------------------------------- blocks the site renders raw

# A table row, a bullet, or a numbered list starting at 1 (only those may begin a list
# mid-paragraph in CommonMark, which GitHub follows; "0." or "3." wrapped to a line's
# start stays text there and here alike).
BLOCK_START = re.compile(r"^(?:\||[-*+]\s|1\.\s)")


def _blocks_glued_to_a_paragraph(text: str) -> list[int]:
    """The lines where a table or a list starts right under a paragraph's line: the site's
    Markdown (Python-Markdown) needs a blank line between them, and without one it prints
    the rows' pipes and the dashes as part of the paragraph (GitHub shows them right)."""
    lines, fenced, block = [], False, []
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced, block = not fenced, []
        elif fenced or not line.strip():
            block = []
        else:
            if block and BLOCK_START.match(line) and not BLOCK_START.match(block[0]):
                if not block[0].startswith(("#", "<", ">", " ", "\t")):
                    lines.append(n)
                block = []
            block.append(line)
    return lines


def test_no_table_or_list_starts_right_under_a_paragraph() -> None:
    """Three research notes' tables and lists came out of the site as raw text."""
    glued = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in sorted((ROOT / "docs").rglob("*.md"))
        for n in _blocks_glued_to_a_paragraph(p.read_text(encoding="utf-8"))
    ]
    assert not glued, f"add a blank line before the table or list at {glued}"


def test_the_glued_block_check_catches_a_table_and_a_list() -> None:
    assert _blocks_glued_to_a_paragraph("Text:\n| a |\n|---|\n") == [2]
    assert _blocks_glued_to_a_paragraph("Text:\n- one\n- two\n") == [2]
    assert _blocks_glued_to_a_paragraph("Text:\n1. one\n") == [2]
    assert _blocks_glued_to_a_paragraph("Text:\n\n| a |\n|---|\n\n- one\n- two\n") == []
    assert _blocks_glued_to_a_paragraph("seed\n0. The next sentence\n") == []
    assert _blocks_glued_to_a_paragraph("```\nText:\n- one\n```\n") == []
    assert _blocks_glued_to_a_paragraph("- one\n  more of one\n- two\n") == []
    assert _blocks_glued_to_a_paragraph("## Heading\n- one\n") == []


# ------------------------------------------------------------- the API reference

API = ROOT / "docs" / "api"


def _api_blocks() -> list[tuple[str, str]]:
    """Each ``::: name`` block of the API reference's pages: the page and the name."""
    return [
        (page.name, name)
        for page in sorted(API.glob("*.md"))
        for name in re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), flags=re.M)
    ]


def _public_methods(cls: Any) -> dict[str, Any]:
    """The methods (properties too) of ``cls`` that ``filters: public`` shows, by name: its
    own, not what it inherits, and no ``__special__`` one (``__init__`` is merged into
    the class's entry)."""
    return {
        name: member
        for name, member in cls.members.items()
        if not name.startswith("_") and not member.is_alias and member.is_function and member.is_public
    }


def _api_problems() -> list[str]:
    """What the reference would get wrong, read by Griffe with the site's extensions as
    mkdocstrings reads the code: a public name it leaves out (one without a docstring, as
    ``show_if_no_docstring`` is off, a public method of a class it shows without one
    too, one assigned in a tuple, which Griffe does not see, or one a package imports
    that the module defining it does not show), and a class or function shown twice (a
    package and the module that defines it both showing it: docs/_hooks/reexports.py
    leaves it to the module, where a page shows that module)."""
    loader = _reference()
    shown: dict[str, str] = {}  # each object shown: where it is defined -> where it is shown
    problems, public = [], []
    for page, name in _api_blocks():
        obj = loader.modules_collection.get_member(name)
        listed = {name: obj}
        if obj.is_module:
            names = (
                [str(n) for n in obj.exports]
                if obj.exports is not None
                else [n for n, m in obj.members.items() if m.is_public]
            )
            unseen = [n for n in names if n not in obj.members]
            problems += [f"{page}: {name}.{n} is not seen (assigned in a tuple?): give it a line" for n in unseen]
            entries = {f"{name}.{n}": obj.members[n] for n in names if n not in unseen}
            entries = {path: m for path, m in entries.items() if not m.is_module}
            public += [(page, path, m) for path, m in entries.items()]
            listed = {path: m for path, m in entries.items() if m.is_public}
        for path, member in listed.items():
            target = member.final_target if member.is_alias else member
            if target.path in shown and (target.is_class or target.is_function):
                problems.append(f"{page}: {path} is shown twice, also as {shown[target.path]}: leave it out of one")
            shown.setdefault(target.path, path)
            if not member.has_docstrings:
                problems.append(f"{page}: {path} has no docstring, so the reference leaves it out")
            if target.is_class:
                problems += [
                    f"{page}: {path}.{method} has no docstring, so the reference leaves it out"
                    for method, m in _public_methods(target).items()
                    if not m.has_docstring
                ]
    for page, path, member in public:
        target = member.final_target if member.is_alias else member
        if target.path not in shown:
            problems.append(f"{page}: {path} is shown nowhere: is it in the __all__ of {target.parent.path}?")
    return problems


def test_the_api_reference_shows_every_public_name_once() -> None:
    """docs/env.md says the reference lists what each module's ``__all__`` names: it left
    out every name without a docstring (``OBS_SIZE``, ``Decoded``...) and showed about 15
    objects twice (``TrainConfig`` under ``train.training`` and ``train.training.config``).
    Then 31 public methods of the classes it shows, without a docstring, were left out:
    every agent's ``act``, ``ChunkExecutor.run`` (the extension point the architecture
    page names), ``BatchEngine.step``."""
    problems = _api_problems()
    assert not problems, "the API reference:\n" + "\n".join(problems)


def test_the_method_check_reads_the_methods_a_page_shows() -> None:
    loader = _reference()
    heuristic = loader.modules_collection.get_member("agents.heuristic.HeuristicAgent")
    assert {"act", "act_batch"} <= set(_public_methods(heuristic))
    batch = loader.modules_collection.get_member("llama_env.batch.BatchEngine")
    assert {"step", "reset"} <= set(_public_methods(batch))
    assert not any(name.startswith("_") for name in _public_methods(batch))


def _reference_options() -> dict:
    yaml = pytest.importorskip("yaml")

    plugins = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["plugins"]
    (mkdocstrings,) = [p["mkdocstrings"] for p in plugins if isinstance(p, dict) and "mkdocstrings" in p]
    return mkdocstrings["handlers"]["python"]["options"]


@functools.cache
def _reference() -> Any:
    """The three packages as the site's reference reads them: a Griffe loader with the
    Griffe extensions it is built with, loaded once for the tests that read it (no build,
    and no import of the training extras)."""
    griffe = pytest.importorskip("griffe")
    extensions = griffe.load_extensions(*(str(ROOT / path) for path in _reference_options().get("extensions", [])))
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)], extensions=extensions)
    for package in ("llama_env", "agents", "train"):
        loader.load(package)
    loader.resolve_aliases(implicit=False, external=False)
    return loader


def test_the_reference_shows_how_to_make_each_class() -> None:
    """A class's entry showed no arguments (``PPOAgent(path=None, deterministic=True,
    seed=None)``, ``TrainConfig``'s fields), and, once they were shown, each ``TrainConfig``
    field read ``_f("sb3", "trainer: ...")``: the reference's Griffe extension shows the
    default, and the help ``llama-rl train --help`` prints as the field's docstring."""
    import dataclasses
    import html

    from train.training.config import TrainConfig

    assert _reference_options()["merge_init_into_class"] is True
    entry = _reference().modules_collection.get_member("train.training.config.TrainConfig")
    for f in dataclasses.fields(TrainConfig):
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        shown = entry.members[f.name]
        assert (str(shown.value), str(entry.parameters[f.name].default)) == (repr(default),) * 2, f.name
        assert shown.docstring is not None, f.name
        assert html.unescape(re.sub(r"\\(.)", r"\1", shown.docstring.value)) == f.metadata["help"], f.name


def test_every_word_in_italics_on_the_agents_page_is_a_term() -> None:
    """docs/agents.md says its words in italics are explained under Terms: *value network*
    and *belief network* were not."""
    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    body, terms = text.split("\n## Terms\n")
    explained = {t.lower() for t in re.findall(r"^\* \*\*(.+?)\*\*", terms, flags=re.M)}
    prose = re.sub(r"`[^`]*`", "", re.sub(r"```.*?```", "", body, flags=re.S))
    italic = {" ".join(w.lower().split()) for w in re.findall(r"(?<![*\w])\*(\w[^*]{0,40}?)\*(?![*\w])", prose)}
    italic -= {"italics"}
    missing = {w for w in italic if w not in explained and w.rstrip("s") not in explained}
    assert italic and not missing, f"in italics on docs/agents.md but not under Terms: {sorted(missing)}"


# ------------------------------------------------------------- the built reference


def _built_site(out: Path) -> Path:
    """The site as ``make test`` builds it (not strictly: that build, in ``make test``, is
    the judge of warnings; the test below reads the pages). It takes seconds: one test
    builds it, and every check of the built pages is in that test."""
    pytest.importorskip("mkdocs")
    import subprocess
    import sys

    build = [sys.executable, "-m", "mkdocs", "build", "--config-file", str(ROOT / "mkdocs.yml")]
    done = subprocess.run([*build, "--site-dir", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def _reference_pages(site: Path) -> dict[str, str]:
    return {p.parent.name: p.read_text(encoding="utf-8") for p in sorted((site / "api").glob("*/index.html"))}


def _unlinked_references(pages: dict[str, str]) -> list[str]:
    """The references the reference leaves unlinked though it shows what they name: a
    reference mkdocs-autorefs cannot resolve is shown as ``<span title="name">``, and an
    entry's heading has its full name as its id. A name that is the end of an entry's
    full name (``LlamaGame``, ``LlamaGame.step``) should have been that entry's link."""
    entries = {i for text in pages.values() for i in re.findall(r'\bid="([\w.]+)"', text)}
    return [
        f"{page}: {name!r} could link to {[e for e in entries if e == name or e.endswith('.' + name)][:3]}"
        for page, text in pages.items()
        for name in re.findall(r'<span title="([\w.]+)"><code>', text)
        if any(e == name or e.endswith("." + name) for e in entries)
    ]


def test_the_built_reference_links_each_role_and_shows_no_source(tmp_path: Path) -> None:
    """The docstrings name objects with Sphinx's roles (:class:`LlamaGame`), and the site's
    hook handed the name as written to mkdocs-autorefs, which knows entries by their full
    names only: about 560 references were plain code. Each is now written in full as the
    docstring's module reads it (``llama_env.engine.LlamaGame``), and links. And no
    attribute's entry shows the source of its value (``_record(...)``,
    ``_StandardValue(4)``), nor a role as written."""
    pages = _reference_pages(_built_site(tmp_path / "site"))
    assert set(pages) == {"llama_env", "agents", "train"}
    assert not _unlinked_references(pages), "\n".join(_unlinked_references(pages))
    # llama_env.table's docstring says :class:`LlamaGame`, which it imports from the engine
    assert re.search(
        r'<a class="autorefs autorefs-internal" title="[^"]*" href="#llama_env\.engine\.LlamaGame">', pages["llama_env"]
    )
    text = html.unescape(re.sub(r"<[^>]+>", "", "".join(pages.values())))
    for expression in ("_record(", "_StandardValue(", ":class:`", str(ROOT)):
        assert expression not in text, expression
    assert re.search(r"MAX_PLAYERS\s*=\s*6\b", text)
    assert re.search(r'HEURISTIC_DEFAULTS\s*=\s*\{\s*"quit_base": 1.0,', text)


def test_the_unlinked_check_catches_a_bare_name() -> None:
    page = '<h2 id="llama_env.engine.LlamaGame">x</h2> <span title="LlamaGame"><code>LlamaGame</code></span>'
    assert len(_unlinked_references({"llama_env": page})) == 1
    assert not _unlinked_references({"llama_env": page.replace('"LlamaGame"', '"train._private"')})


def test_the_reference_shows_a_value_a_reader_looks_up_and_no_expression() -> None:
    """An attribute's entry showed the source of its value: the whole ``FIELDS`` table,
    the ``_record(...)`` call that makes ``Decoded`` with its reST, ``_StandardValue(4)``.
    Then only a short literal was shown, and the values people look up went too:
    ``HEURISTIC_DEFAULTS``, ``MAX_SAVE_DATA_BYTES = 16 * 2**20``, ``MAX_GAMES``, the type
    aliases. Read from the reference's loader: the values docs/_hooks/attribute_values.py
    leaves."""
    import ast

    from agents.heuristic import HEURISTIC_DEFAULTS

    def value(path: str) -> str | None:
        shown = _reference().modules_collection.get_member(path).value
        return None if shown is None else str(shown)

    assert {
        path: value(path)
        for path in (
            "llama_env.engine.MAX_PLAYERS",
            "llama_env.engine.DEFAULT_NUM_PLAYERS",
            "llama_env.engine.DECK_SIZE",
            "llama_env.engine.Rules.num_players",
            "agents.ppo.MAX_SAVE_DATA_BYTES",
            "train.cli.common.MAX_GAMES",
            "train.evaluation.ratings.SIGMA",
            "train.training.rllib.env.SHARED_POLICY",
            "train.training.sb3.Sb3Options.engine",
            "llama_env.agent.Registration",
            "llama_env.agent.SeedKey",
            "agents.search.Layers",
            "train.training.sb3.vec_env.PolicyFn",
        )
    } == {
        "llama_env.engine.MAX_PLAYERS": "6",
        "llama_env.engine.DEFAULT_NUM_PLAYERS": "4",  # _StandardValue(4) in the code
        "llama_env.engine.DECK_SIZE": "56",
        "llama_env.engine.Rules.num_players": "4",
        "agents.ppo.MAX_SAVE_DATA_BYTES": "16 * 2 ** 20",
        "train.cli.common.MAX_GAMES": "10 ** 9",
        "train.evaluation.ratings.SIGMA": repr(25.0 / 3),
        "train.training.rllib.env.SHARED_POLICY": "'shared'",
        "train.training.sb3.Sb3Options.engine": "'auto'",
        "llama_env.agent.Registration": "tuple[str, Factory, str, str]",
        "llama_env.agent.SeedKey": "tuple[int, ...]",
        "agents.search.Layers": "list[tuple[np.ndarray, np.ndarray]]",
        "train.training.sb3.vec_env.PolicyFn": "Callable[[np.ndarray, np.ndarray], np.ndarray]",
    }
    assert ast.literal_eval(value("agents.heuristic.HEURISTIC_DEFAULTS") or "None") == HEURISTIC_DEFAULTS
    left_out = (
        "llama_env.observation.FIELDS",  # a table of Field(...) calls
        "llama_env.observation.Decoded",  # _record(...), with its reST
        "llama_env.engine.DEFAULT_RULES",  # an object, not a literal
        "agents.ppo.MODELS_DIR",  # a path of the machine that builds the site
        "llama_env.table.Table.names",  # the code of __init__
    )
    assert {path: value(path) for path in left_out} == dict.fromkeys(left_out)


def test_a_value_computed_at_import_is_shown_only_where_it_is_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value the reference reads from the imported module was shown whatever short
    literal it was: a public ``X = str(SOME_PATH)`` or ``os.environ.get(...)`` would have
    published the value on the machine that built the site. Only numbers and booleans, and
    tuples, lists and dicts of them, are read from the module; a string only as the source
    writes it."""
    import importlib.util
    import sys

    griffe = pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("_hook_attribute_values", ROOT / "docs/_hooks/attribute_values.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    package = tmp_path / "machine_values"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "config.py").write_text(
        "import os\n"
        "from pathlib import Path\n"
        "HOME = str(Path.home())\n"
        'SEARCH_PATH = os.environ.get("PATH", "")\n'
        "FOLDER = Path(__file__).parent.name\n"
        'SIZE = len("abc") * 2\n'
        "LIMITS = tuple(range(3))\n"
        "TABLE = dict.fromkeys(range(2), 0.5)\n"
        'NAME = "shipped"\n'
        "PAIR = (NAME, SIZE)\n"
        "HOME_PAIR = (HOME, SIZE)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(hooks, "RUNTIME_PACKAGES", ("machine_values",))
    try:
        loader = griffe.GriffeLoader(search_paths=[str(tmp_path)], extensions=griffe.load_extensions(hooks.ShownValues))
        loader.load("machine_values")
        config = loader.modules_collection.get_member("machine_values.config")
        shown = {name: None if a.value is None else str(a.value) for name, a in config.attributes.items()}
    finally:
        for name in ("machine_values.config", "machine_values"):
            sys.modules.pop(name, None)
    assert shown == {
        "HOME": None,
        "SEARCH_PATH": None,
        "FOLDER": None,
        "SIZE": "6",
        "LIMITS": "(0, 1, 2)",
        "TABLE": "{0: 0.5, 1: 0.5}",
        "NAME": "'shipped'",
        "PAIR": "('shipped', 6)",  # worked out from the source's string and SIZE's value
        "HOME_PAIR": None,
    }


# ------------------------------------------------------------- names the docs write in full

DOTTED = re.compile(r"`((?:llama_env|agents|train)(?:\.\w+)+)(?:\([^`]*\))?`")
"""A name of the project written in full in backticks (``train.evaluation.evaluate``)."""


def _unexported(text: str) -> list[str]:
    """The full names in ``text`` the reference does not show as public, read statically
    by its loader: one that does not exist, one with a private part
    (``llama_env.engine.LlamaGame._x``), and a module's attribute left out of its
    ``__all__`` (a file name, ``agents.py``, is no name)."""
    collection = _reference().modules_collection
    found = []
    for dotted in dict.fromkeys(DOTTED.findall(text)):
        parts = dotted.split(".")
        if parts[-1] in ("py", "md", "toml", "json", "ipynb"):
            continue
        obj = collection.get_member(parts[0])
        for part in parts[1:]:
            member = obj.members.get(part)
            submodule = member is not None and not member.is_alias and member.is_module  # no __all__ lists it
            exports = obj.exports if obj.is_module and not submodule else None
            if member is None or part.startswith("_") or (exports is not None and part not in exports):
                found.append(dotted)
                break
            obj = member.final_target if member.is_alias else member
    return found


def test_the_docs_name_in_full_only_what_a_module_exports() -> None:
    """docs/architecture.md named ``train.evaluation.runner.run_chunks``, which the module
    does not export and the reference does not show: a name a reader looks up is public."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = {p.name: _unexported(p.read_text(encoding="utf-8")) for p in docs}
    assert not {page: names for page, names in found.items() if names}
    assert _unexported("`train.evaluation.runner.run_chunks` and `train.evaluation.evaluate()`, `agents.py`") == [
        "train.evaluation.runner.run_chunks"
    ]
    # a name that does not exist, where the module has no __all__; a private part after
    # the first; a module of an extra (Ray) read without importing it
    assert _unexported("`llama_env.rewards.no_such_name` `llama_env.engine.LlamaGame._x`") == [
        "llama_env.rewards.no_such_name",
        "llama_env.engine.LlamaGame._x",
    ]
    assert _unexported("`llama_env.engine.LlamaGame.step` `train.training.rllib.env`") == []

"""The README and docs/ are a current reference: no diary, no path or command that does not exist, and every
figure of docs/performance.md with the command that reproduces it and the date of its run.

docs/performance.md's format: every table is either a figure table, header ``| figure | value | command |
last run |``, whose rows each carry at least one command in backticks (``python benchmarks/...``,
``loom-explorer ...`` or ``python -m pytest ...``) and a date (YYYY-MM-DD), or the table of ideas not kept, header
``| idea | measured effect | why dropped |``.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from waits import WAIT_S

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PERFORMANCE = ROOT / "docs" / "performance.md"

# Words of a lab journal: issue and session numbers, ordinal sessions, days relative to the writing.
DIARY = [
    r"\bissues? ?#?\d+",
    r"\bissue-\d+",
    r"(?<![\w&/(])#\d+\b",
    (
        r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(st|nd|rd|th)|last|previous|next|"
        r"this|that|same|earlier|later|another)\s+(session|stop)\b"
    ),
    r"\bthis \d+-core machine\b",
    r"\b(today|yesterday|tonight|this morning|this afternoon)\b",
    r"\bthe (model|code|fix) of (the|an?) (\w+ )?issue\b",
    r"\bI (have|had|tried|think|thought|found|measured)\b",
]
# "session" alone is the diary's word; a browser (Panel/Bokeh server) session is the explorer's.
SESSION = re.compile(r"\bsessions?\b", re.IGNORECASE)
SESSION_ALLOWED = re.compile(r"\b(browser|server|Bokeh|Panel)\s+$", re.IGNORECASE)

FIGURE_HEADER = ["figure", "value", "command", "last run"]
IDEA_HEADER = ["idea", "measured effect", "why dropped"]
COMMAND_PREFIXES = ("python benchmarks/", "loom-explorer ", "python -m pytest")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# Paths in the text: repository files, and package modules named relative to loom_explorer/.
REPO_PATH = re.compile(
    r"(?<![\w/.-])((?:loom_explorer|benchmarks|tests|apps|kernels|hw|docs)/[\w./-]*\.(?:py|yaml|md|csv|sh|png)(?:\.gz)?)\b"
)
PACKAGE_PATH = re.compile(
    r"`((?:model|solve|mapping|program|hardware|noc|traffic|export|targets|deploy|accuracy|sweep|ui|store|cli|data)/[\w/]+\.py)"
)


def _prose(text: str) -> str:
    """``text`` without fenced code blocks and inline code spans (where ``Session`` is the class)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def _code(text: str) -> list[str]:
    """Every inline code span and every line of a fenced block, ``$ `` prompts dropped."""
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE))
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    lines = [line for block in blocks for line in block.splitlines()]
    return [s.strip().removeprefix("$ ") for s in spans + lines]


def _commands(text: str) -> list[str]:
    return [c for c in _code(text) if c.startswith(COMMAND_PREFIXES)]


def _tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """(section heading, header cells, rows of cells) of every Markdown table."""
    out: list[tuple[str, list[str], list[list[str]]]] = []
    heading, rows = "", []
    for line in [*text.splitlines(), ""]:
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
            continue
        if rows:
            out.append((heading, rows[0], rows[2:]))
            rows = []
    return out


_HELPS = """
import contextlib, io, json, re, sys
from loom_explorer.cli import main

def helped(*words):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main([*words, "--help"])
        except SystemExit:
            pass
    return out.getvalue()

found = {"": helped()}
for sub in re.search(r"\\{([\\w,]+)\\}", found[""]).group(1).split(","):
    found[sub] = helped(sub)
    nested = re.search(r"\\{([\\w,]+)\\}", found[sub])
    for word in nested.group(1).split(",") if nested else ():
        found[f"{sub} {word}"] = helped(sub, word)
print(json.dumps(found))
"""


@functools.cache
def _cli_helps() -> dict[str, str]:
    """``loom-explorer [SUB [NESTED]] --help`` of every subcommand, by "SUB NESTED", from one process."""
    done = subprocess.run(
        [sys.executable, "-c", _HELPS], capture_output=True, text=True, timeout=WAIT_S, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout))


def _cli_help(*words: str) -> str:
    helps = _cli_helps()
    assert " ".join(words) in helps, f"loom-explorer has no {' '.join(words)!r}"
    return helps[" ".join(words)]


def _flags(command: str) -> list[str]:
    return re.findall(r"(?<![\w-])(--[a-z][\w-]*)", command)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_diary_words(doc: Path) -> None:
    text = doc.read_text()
    hits = [m.group(0) for pattern in DIARY for m in re.finditer(pattern, text, flags=re.IGNORECASE)]
    prose = _prose(text)
    hits += [
        prose[max(0, m.start() - 30) : m.end()]
        for m in SESSION.finditer(prose)
        if not SESSION_ALLOWED.search(prose[max(0, m.start() - 30) : m.start()])
    ]
    assert not hits, f"{doc.name}: diary words {hits}"


def test_the_diary_patterns_catch_the_diary() -> None:
    diary = [
        "measured in the third session",
        "the model of issue 2",
        "see issue 7",
        "on this 2-core machine",
        "as the last session found",
        "measured today",
    ]
    current = [
        "one explorer per browser session",
        "a Bokeh server session ends",
        "this machine only",
        "the issue's targets",
        "1, 2, 6 or 8 workers",
    ]
    for text in diary:
        caught = any(re.search(p, text, flags=re.IGNORECASE) for p in DIARY) or any(
            not SESSION_ALLOWED.search(text[: m.start()]) for m in SESSION.finditer(text)
        )
        assert caught, text
    for text in current:
        assert not any(re.search(p, text, flags=re.IGNORECASE) for p in DIARY), text
        assert all(SESSION_ALLOWED.search(text[: m.start()]) for m in SESSION.finditer(text)), text


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_named_exists(doc: Path) -> None:
    text = doc.read_text()
    missing = [p for p in REPO_PATH.findall(text) if "*" not in p and not (ROOT / p).exists()]
    missing += [p for p in PACKAGE_PATH.findall(text) if not (ROOT / "loom_explorer" / p).exists()]
    assert not missing, f"{doc.name} names files that do not exist: {sorted(set(missing))}"


def _unknown(command: str) -> list[str]:
    """What ``command`` names that does not exist: its script, subcommand or flags."""
    words = command.split()
    if command.startswith("python benchmarks/"):
        script = ROOT / words[1]
        if not script.is_file():
            return [words[1]]
        return [f for f in _flags(command) if f'"{f}"' not in script.read_text()]
    if command.startswith("loom-explorer "):
        subcommands = re.search(r"\{([\w,]+)\}", _cli_help())
        assert subcommands, "loom-explorer --help lists no subcommands"
        if words[1] not in subcommands.group(1).split(","):
            return [words[1]]
        help_text = _cli_help(words[1])
        nested = re.search(r"\{([\w,]+)\}", help_text)
        if nested and len(words) > 2 and words[2] in nested.group(1).split(","):
            help_text += _cli_help(words[1], words[2])
        return [f for f in _flags(command) if not re.search(rf"{re.escape(f)}\b", help_text)]
    return [w for w in words[3:] if not w.startswith("-") and "/" in w and not (ROOT / w).exists()]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_command_shown_exists(doc: Path) -> None:
    """Every command shown as code runs something that exists: a benchmark script and the flags it takes,
    a loom-explorer subcommand and its flags, the test paths given to pytest."""
    unknown = {c: u for c in _commands(doc.read_text()) if (u := _unknown(c))}
    assert not unknown, f"{doc.name}: {unknown}"


def test_performance_md_shows_its_commands() -> None:
    commands = _commands(PERFORMANCE.read_text())
    assert any(c.startswith("python benchmarks/") for c in commands)
    assert any(c.startswith("loom-explorer ") for c in commands)


def test_every_figure_in_performance_md_has_its_command_and_date() -> None:
    tables = _tables(PERFORMANCE.read_text())
    figures = [t for t in tables if t[1] == FIGURE_HEADER]
    assert figures and [t for t in tables if t[1] == IDEA_HEADER]
    for heading, header, rows in tables:
        assert header in (FIGURE_HEADER, IDEA_HEADER), f"section {heading!r}: a table of another form {header}"
        for row in rows:
            assert len(row) == len(header), f"section {heading!r}: {row}"
            if header == FIGURE_HEADER:
                figure, value, command, last_run = row
                assert value, f"{heading}: {figure} has no value"
                assert any(c.startswith(COMMAND_PREFIXES) for c in re.findall(r"`([^`]+)`", command)), (
                    f"{heading}: {figure} has no command"
                )
                assert DATE.match(last_run), f"{heading}: {figure}: last run {last_run!r} is not a date"
    tests = [rows for heading, header, rows in tables if heading == "Tests"]
    assert len(tests) == 1 and [r[0] for r in tests[0]] == ["whole suite", "quick tier"], tests


def test_the_quick_tier_of_performance_md_is_the_readme_s() -> None:
    contributing = (ROOT / "README.md").read_text().split("\n## Contributing", 1)[1]
    named = re.findall(r"^python -m pytest .*-m .*$", contributing, flags=re.MULTILINE)
    assert len(named) == 1, f"the README's Contributing section names {len(named)} quick-tier commands"
    rows = {r[0]: r for heading, header, rows in _tables(PERFORMANCE.read_text()) if heading == "Tests" for r in rows}
    assert f"`{named[0]}`" in rows["quick tier"][2], (named[0], rows["quick tier"][2])

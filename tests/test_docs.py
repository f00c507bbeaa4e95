"""The documentation a user pastes from: every `aapcgen` command in a shell block of README.md
and docs/ parses with the CLI as it is, every repository path those commands name exists,
every relative link resolves, and no page speaks of the project's issue numbers."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from aapcgen.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_BLOCK = re.compile(r"```(?:sh|bash|console|shell)\n(.*?)```", re.S)
# an aapcgen command line, after environment assignments, sudo, flock and a venv path
AAPCGEN = re.compile(
    r"^(?:[A-Z_]+=\S*\s+)*(?:sudo\s+)?(?:[A-Z_]+=\S*\s+)*(?:flock\s+(?:-[xs]\s+)?\S+\s+)?"
    r"(?:\S*/)?aapcgen\s+(.*)$"
)
REPO_PATH = re.compile(r"(?<![\w./-])((?:topologies|tuning|tests|runtime_c|templates)/[\w./-]+)")


def shell_lines(text: str) -> list[str]:
    """The command lines of a page's shell blocks: continuations joined, comments and prompts
    dropped, `&&`, `;` and `|` chains split."""
    lines = []
    for block in SHELL_BLOCK.findall(text):
        for line in re.sub(r"\s*\\\n\s*", " ", block).splitlines():
            line = re.sub(r"^\$ ", "", re.sub(r"\s+#.*$", "", line).strip())
            lines += [p for p in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line) if p]
    return lines


def aapcgen_commands(text: str) -> list[str]:
    return [m.group(1) for m in map(AAPCGEN.match, shell_lines(text)) if m]


def parse_error(arguments: str) -> str | None:
    """None when the CLI's parser takes the arguments, else its one-line complaint."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(shlex.split(arguments))
    except SystemExit as exc:
        if exc.code:
            return err.getvalue().strip().splitlines()[-1]
    return None


def test_the_extraction_finds_commands_and_refuses_a_wrong_one():
    text = (
        "```sh\nAAPC_X=1 sudo .venv/bin/aapcgen info topologies/paper-fig1.yaml \\\n  --json\n```"
    )
    assert aapcgen_commands(text) == ["info topologies/paper-fig1.yaml --json"]
    assert parse_error("info topologies/paper-fig1.yaml") is None
    assert "invalid choice" in (parse_error("infoo topologies/paper-fig1.yaml") or "")
    assert "unrecognized" in (parse_error("info topologies/paper-fig1.yaml --no-such") or "")


def test_every_aapcgen_command_in_the_docs_parses():
    commands = [(p, c) for p in PAGES for c in aapcgen_commands(p.read_text())]
    assert len(commands) > 40  # the extraction still sees the pages' commands
    bad = [(p.relative_to(ROOT), c, parse_error(c)) for p, c in commands if parse_error(c)]
    assert not bad, bad


def named_paths(page: Path) -> set[str]:
    """The repository paths a page's commands read: not a placeholder (capitals, a glob), not a
    folder the page's own commands write (-o, --output) or a file in one."""
    lines = shell_lines(page.read_text())
    written = {m for ln in lines for m in re.findall(r"(?:-o|--output)[ =](\S+)", ln)}
    return {
        path.rstrip(".")
        for line in lines
        for path in REPO_PATH.findall(line)
        if not re.search(r"[A-Z*]", path.split("/")[-1].split(".")[0] or "x")
        and not any(path == w or path.startswith(w.rstrip("/") + "/") for w in written)
    }


def test_every_repository_path_a_command_names_exists():
    named = {(page.relative_to(ROOT), path) for page in PAGES for path in named_paths(page)}
    assert len(named) > 20
    missing = [(page, path) for page, path in named if not (ROOT / path).exists()]
    assert not missing, missing


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text())
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    missing = [t for t in local if not (page.parent / t).exists()]
    assert not missing, missing


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_speaks_of_issue_numbers(page):
    assert not re.findall(r".{0,30}\bissues? \d+.{0,30}", page.read_text(), re.I)

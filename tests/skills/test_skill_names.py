"""Every kernelpilot tool and CLI command that the skills, slash commands, playbooks and docs name must exist.

Mention syntax (used throughout `skills/**/*.md`, `skills/.commands/*.md`, `playbooks/*.md`, `docs/*.md`),
recognized only inside Markdown code (inline backticks, which may wrap lines, or fenced blocks):

- `mcp: <tool>` names an MCP tool, e.g. `mcp: spec_lookup`.
- `kernelpilot <word>... [args] [--flags]` names a CLI command: the longest run of leading words that is a
  registered command is the command (later words are positionals); every `--flag` must be an option of that
  command. `kernelpilot <command>` with only a placeholder names nothing.
- `kernelpilot://playbooks/<file>.md` names a bundled playbook resource.

Outside code, `**<skill-name>**` (bold, `kernel-*` or `gpu-kernel-*`) names a skill, which must be a folder
under `skills/`, and relative Markdown links `[text](file.md)` must resolve.

Names are checked against the live capability registry (`all_capabilities()`) and the generated CLI parser, so
the check covers whatever the merged branches register.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from tests.needs import needs_module

REPO = Path(__file__).resolve().parents[2]
SKILLS = REPO / "skills"
PLAYBOOKS = REPO / "playbooks"
DOCS = REPO / "docs"

SKILL_NAMES = (
    "gpu-kernel-optimizer",
    "kernel-triage",
    "kernel-baseline",
    "kernel-bottleneck",
    "kernel-profile-optimizer",
    "kernel-exp-history",
)
COMMAND_NAMES = ("optimize-kernel", "kernel-roofline", "kernel-fit")
PLAYBOOK_NAMES = ("cuda", "triton", "hip", "ck", "asm", "cute-cutlass")

_FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)
_SPAN = re.compile(r"`([^`]+)`")
_MCP = re.compile(r"\bmcp:\s*([A-Za-z0-9_]+)")
_CLI = re.compile(r"(?<![\w./:-])kernelpilot(?=[ \t\n])")
_WORD = re.compile(r"^[a-z][a-z0-9-]*$")
_PLAYBOOK_URI = re.compile(r"kernelpilot://playbooks/([A-Za-z0-9_./-]+\.md)")
_BOLD_SKILL = re.compile(r"\*\*((?:gpu-)?kernel-[a-z0-9-]+)\*\*")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_SHELL_STOP = {"|", "||", "&&", ";", ">", ">>", "2>", "&"}
_GLOBAL_FLAGS = {"--json", "--help", "-h", "--version"}


@dataclass(frozen=True)
class Mention:
    kind: str  # "mcp" | "cli" | "playbook"
    text: str  # tool name, CLI tokens joined by spaces, or playbook file
    line: int


def _blank(chars: list[str], start: int, end: int) -> None:
    for i in range(start, end):
        if chars[i] != "\n":
            chars[i] = " "


def _split_code(text: str) -> tuple[list[tuple[str, int]], str]:
    """Code inside fenced blocks (per line) and inline spans, each with its 0-based offset in `text`,
    and the prose: `text` with all code blanked out (same length, same line breaks)."""
    chunks: list[tuple[str, int]] = []
    masked = list(text)
    for m in _FENCE.finditer(text):
        offset = m.start(2)
        pending: tuple[str, int] | None = None  # a shell line continued with a trailing backslash
        for line in m.group(2).splitlines(keepends=True):
            code = line.rstrip("\n")
            if pending is not None:
                code, start = pending[0] + " " + code, pending[1]
            else:
                start = offset
            if code.endswith("\\"):
                pending = (code[:-1], start)
            else:
                chunks.append((code, start))
                pending = None
            offset += len(line)
        if pending is not None:
            chunks.append(pending)
        _blank(masked, m.start(), m.end())
    for m in _SPAN.finditer("".join(masked)):
        if "\n\n" not in m.group(1):
            chunks.append((m.group(1), m.start(1)))
            _blank(masked, m.start(), m.end())
    chunks.sort(key=lambda c: c[1])
    return chunks, "".join(masked)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def extract_mentions(text: str) -> list[Mention]:
    """Every tool, CLI command and playbook mention in one Markdown text, in the syntax described above."""
    found: list[Mention] = []
    for chunk, base in _split_code(text)[0]:
        for m in _MCP.finditer(chunk):
            found.append(Mention("mcp", m.group(1), _line_of(text, base + m.start())))
        for m in _PLAYBOOK_URI.finditer(chunk):
            found.append(Mention("playbook", m.group(1), _line_of(text, base + m.start())))
        for m in _CLI.finditer(chunk):
            tokens: list[str] = []
            for tok in chunk[m.end() :].split():
                if tok in _SHELL_STOP:
                    break
                tokens.append(tok)
            found.append(Mention("cli", " ".join(tokens), _line_of(text, base + m.start())))
    return found


@dataclass(frozen=True)
class Registry:
    tools: frozenset[str]
    commands: dict[tuple[str, ...], frozenset[str]]  # command path -> its option strings
    playbooks: frozenset[str]
    skills: frozenset[str]


def live_registry(playbooks_dir: Path = PLAYBOOKS, skills_dir: Path = SKILLS) -> Registry:
    """Tool names from the capability registry; commands and their flags from the generated CLI parser."""
    from kernelpilot.adapters.cli import build_parser
    from kernelpilot.adapters.mcp_server import MCP_ONLY_TOOLS
    from kernelpilot.capabilities import all_capabilities

    parser = build_parser()
    commands: dict[tuple[str, ...], frozenset[str]] = {}
    for cap in all_capabilities():
        node = parser
        for word in cap.command:
            sub = next(a for a in node._actions if isinstance(a, argparse._SubParsersAction))
            node = sub.choices[word]
        commands[cap.command] = frozenset(s for a in node._actions for s in a.option_strings)
    return Registry(
        tools=frozenset(c.tool for c in all_capabilities()) | MCP_ONLY_TOOLS,
        commands=commands,
        playbooks=frozenset(p.relative_to(playbooks_dir).as_posix() for p in playbooks_dir.rglob("*.md")),
        skills=frozenset(p.parent.name for p in skills_dir.glob("*/SKILL.md")),
    )


def _clean_flag(tok: str) -> str:
    tok = tok.strip("[](),.;")
    return tok.split("=", 1)[0]


def _leading_words(tokens: list[str]) -> list[str]:
    words: list[str] = []
    for tok in tokens:
        if not _WORD.match(tok):
            break
        words.append(tok)
    return words


def command_of(tokens: list[str], reg: Registry) -> tuple[str, ...] | None:
    """The longest run of leading words that is a registered command, or None."""
    words = _leading_words(tokens)
    prefixes = (tuple(words[:n]) for n in range(len(words), 0, -1))
    return next((p for p in prefixes if p in reg.commands), None)


def check_cli(tokens: list[str], reg: Registry) -> str | None:
    """Problem text for one `kernelpilot ...` mention, or None when it names an existing command and flags."""
    words = _leading_words(tokens)
    if not words:
        return None  # a notation such as `kernelpilot <command>` names no command
    command = command_of(tokens, reg)
    if command is None:
        return f"unknown CLI command `kernelpilot {' '.join(words)}`"
    allowed = reg.commands[command] | _GLOBAL_FLAGS
    bad = [
        f for f in (_clean_flag(t) for t in tokens if t.lstrip("[").startswith("-")) if f and f not in allowed
    ]
    if bad:
        return f"`kernelpilot {' '.join(command)}` has no option {', '.join(bad)}"
    return None


def check_file(path: Path, reg: Registry, root: Path) -> list[str]:
    """All problems in one Markdown file, each as `<path relative to root>:<line>: <message>`."""
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(root).as_posix()
    problems: list[str] = []
    for mention in extract_mentions(text):
        where = f"{rel}:{mention.line}"
        if mention.kind == "mcp" and mention.text not in reg.tools:
            problems.append(f"{where}: unknown MCP tool `mcp: {mention.text}`")
        elif mention.kind == "playbook" and mention.text not in reg.playbooks:
            problems.append(f"{where}: no playbook `{mention.text}`")
        elif mention.kind == "cli":
            msg = check_cli(mention.text.split(), reg)
            if msg:
                problems.append(f"{where}: {msg}")
    prose = _split_code(text)[1]
    for m in _BOLD_SKILL.finditer(prose):
        if m.group(1) not in reg.skills:
            problems.append(f"{rel}:{_line_of(prose, m.start())}: no skill named {m.group(1)!r}")
    for m in _LINK.finditer(prose):
        target = m.group(1).split("#", 1)[0]
        if not target or "://" in target or target.startswith("mailto:"):
            continue
        if not (path.parent / target).exists():
            problems.append(f"{rel}:{_line_of(prose, m.start())}: broken link {m.group(1)!r}")
    return problems


def markdown_files(root: Path) -> list[Path]:
    """The files the check covers: skills (with hidden `.commands/`), playbooks and docs."""
    files: list[Path] = []
    for sub in ("skills", "playbooks", "docs"):
        folder = root / sub
        if folder.is_dir():
            files.extend(sorted(folder.rglob("*.md")))  # rglob includes dot-folders such as skills/.commands
    return files


def check_tree(root: Path, reg: Registry) -> list[str]:
    return [p for f in markdown_files(root) for p in check_file(f, reg, root)]


# ----------------------------------------------------------------------------------------------------


def test_every_named_tool_and_command_exists() -> None:
    """The real check: passes once every helper's capabilities are merged into the registry."""
    reg = live_registry()
    problems = check_tree(REPO, reg)
    assert not problems, "skills/playbooks/docs name things that do not exist:\n" + "\n".join(problems)


def test_every_named_command_has_working_help(run_cli) -> None:  # type: ignore[no-untyped-def]
    """Skills send agents to `kernelpilot <command> --help` for flags: it must work for each command named."""
    reg = live_registry()
    named: set[tuple[str, ...]] = set()
    for f in markdown_files(REPO):
        for m in extract_mentions(f.read_text(encoding="utf-8")):
            command = command_of(m.text.split(), reg) if m.kind == "cli" else None
            if command is not None:
                named.add(command)
    assert ("doctor",) in named
    for command in sorted(named):
        res = run_cli(*command, "--help")
        assert res.code == 0, f"kernelpilot {' '.join(command)} --help failed: {res.err}"
        assert f"usage: kernelpilot {' '.join(command)}" in res.out


def test_the_check_covers_all_skills_commands_and_playbooks() -> None:
    files = {f.relative_to(REPO).as_posix() for f in markdown_files(REPO)}
    for name in SKILL_NAMES:
        assert f"skills/{name}/SKILL.md" in files
    for name in COMMAND_NAMES:
        assert f"skills/.commands/{name}.md" in files
    for name in PLAYBOOK_NAMES:
        assert f"playbooks/{name}.md" in files
    mentions = [m for f in markdown_files(REPO) for m in extract_mentions(f.read_text(encoding="utf-8"))]
    tools = {m.text for m in mentions if m.kind == "mcp"}
    # the router's Step 0 and the loop's record step must be backed by tools, not memory
    assert {"spec_lookup", "roofline", "init_workspace", "audit_citations", "evaluate", "exp_ingest"} <= tools
    assert len({m.text.split()[0] for m in mentions if m.kind == "cli" and m.text}) >= 10


def test_checker_reports_a_skill_naming_missing_things(tmp_path: Path) -> None:
    """Negative test: a temp skill naming a missing tool, command, flag, playbook and link is reported."""
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / "cuda.md").write_text("# CUDA\n", encoding="utf-8")
    skill = tmp_path / "skills" / "bogus-skill"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: bogus-skill\ndescription: test\n---\n"
        "1. Check the machine: `mcp: doctor` (`kernelpilot doctor --json`).\n"  # exists in the foundation
        "2. Then `mcp: no_such_tool_xyz` (`kernelpilot frobnicate-xyz --fast`).\n"
        "3. Also `kernelpilot doctor --no-such-flag`; read `kernelpilot://playbooks/cuda.md`\n"
        "   and `kernelpilot://playbooks/missing.md`; notation `kernelpilot <command>` is fine.\n"
        "4. See [details](details.md) and **kernel-nonexistent-skill**.\n"
        "```bash\nkernelpilot doctor --json | head\nkernelpilot spec-lookup-xyz H100\n```\n",
        encoding="utf-8",
    )
    reg = live_registry(tmp_path / "playbooks", tmp_path / "skills")
    problems = check_tree(tmp_path, reg)
    where = "skills/bogus-skill/SKILL.md"
    assert problems == [
        f"{where}:6: unknown MCP tool `mcp: no_such_tool_xyz`",
        f"{where}:6: unknown CLI command `kernelpilot frobnicate-xyz`",
        f"{where}:7: `kernelpilot doctor` has no option --no-such-flag",
        f"{where}:8: no playbook `missing.md`",
        f"{where}:12: unknown CLI command `kernelpilot spec-lookup-xyz`",
        f"{where}:9: no skill named 'kernel-nonexistent-skill'",
        f"{where}:9: broken link 'details.md'",
    ]


def test_extract_mentions_handles_wrapped_spans_fences_and_placeholders() -> None:
    text = (
        "Run `kernelpilot workspace init ws --kernel k.cu\n--platform H100` then `mcp: roofline`.\n"
        "Notation: `mcp: <tool>` and `kernelpilot <command>`; prose kernelpilot spec is not code.\n"
        "```\n$ kernelpilot isa fit a.cubin --kernel gemm && kernelpilot audit\n"
        "kernelpilot eval task \\\n    --refresh-baseline\n```\n"
    )
    got = [(m.kind, m.text, m.line) for m in extract_mentions(text)]
    assert got == [
        ("cli", "workspace init ws --kernel k.cu --platform H100", 1),
        ("mcp", "roofline", 2),
        ("cli", "<command>", 3),
        ("cli", "isa fit a.cubin --kernel gemm", 5),
        ("cli", "audit", 5),
        ("cli", "eval task --refresh-baseline", 6),
    ]


def test_skill_folders_and_frontmatter() -> None:
    parser = needs_module("skills_ref.parser")
    found = sorted(p.name for p in SKILLS.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert found == sorted(SKILL_NAMES), (
        "every folder in skills/ must be a skill (commands live in skills/.commands)"
    )
    for name in SKILL_NAMES:
        meta, body = parser.parse_frontmatter((SKILLS / name / "SKILL.md").read_text(encoding="utf-8"))
        assert meta["name"] == name
        assert len(meta["description"]) >= 80, f"{name}: description must say what and when"
        assert "Entry" in body or "Phase 1" in body, f"{name}: needs entry/exit criteria or phases"
        assert len(body.splitlines()) < 500, f"{name}: keep SKILL.md concise; move details to linked files"


def test_slash_commands_have_frontmatter_and_use_arguments() -> None:
    parser = needs_module("skills_ref.parser")
    for name in COMMAND_NAMES:
        meta, body = parser.parse_frontmatter(
            (SKILLS / ".commands" / f"{name}.md").read_text(encoding="utf-8")
        )
        assert set(meta) == {"description", "argument-hint"}, name
        assert meta["description"] and meta["argument-hint"], name
        assert "$ARGUMENTS" in body, f"{name}: the body must use $ARGUMENTS"
        assert "ASK" in body, f"{name}: must ask for missing input rather than guess"


def test_playbooks_group_levers_by_bottleneck_and_cite_no_bare_specs() -> None:
    spec_number = re.compile(
        r"\b\d+(?:\.\d+)?\s*(?:TB/s|GB/s|TFLOP/s|TFLOPS|TOP/s|MHz|GHz|KB|KiB|MB|MiB|GB|GiB|W)\b"
    )
    for name in PLAYBOOK_NAMES:
        text = (PLAYBOOKS / f"{name}.md").read_text(encoding="utf-8")
        for section in ("## Memory-bound", "## Compute-bound", "## Latency-bound", "## Sync-bound"):
            assert section in text, f"{name}.md lacks {section}"
        for field in ("**When**", "**Verify**", "**Risks**"):
            assert field in text, f"{name}.md lacks {field}"
        assert "mcp: spec_lookup" in text, f"{name}.md must send hardware facts to spec_lookup"
        bare = [m.group(0) for m in spec_number.finditer(text)]
        assert not bare, f"{name}.md states hardware numbers without a citation: {bare}"

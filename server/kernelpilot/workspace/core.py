"""Workspace folders: naming, locating, and `init` (copy kernel, layout, README, git) with no half-states.

A workspace is a folder `<root>/<name>/` holding the kernel, `workspace.json` (task context),
`README.md` (rendered), `memory/`, `plans/`, `profiles/`, `reports/` and its own git repository.
Init builds everything in a temp folder beside the target and renames it into place at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelpilot.foundation import readers
from kernelpilot.foundation.atomic import write_json_atomic, write_text_atomic
from kernelpilot.foundation.errors import CitationError, InputFileError, InvalidArgumentError
from kernelpilot.foundation.validation import path_kind
from kernelpilot.workspace import gitops, hardware, render
from kernelpilot.workspace.errors import WorkspaceExistsError, WorkspaceNameError, WorkspaceNotFoundError
from kernelpilot.workspace.models import InitWorkspaceRequest, InitWorkspaceResult

ROOT_ENV = "KERNELPILOT_WORKSPACES"
DEFAULT_ROOT = "kernelpilot-workspaces"
CONFIG_FILE = "workspace.json"
SUBDIRS = ("memory", "plans", "profiles", "reports")
RESERVED_KERNEL_NAMES = frozenset({"README.md", CONFIG_FILE, ".gitignore", ".git", *SUBDIRS})
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

GITIGNORE = """\
# kernelpilot workspace: keep sources, memory, plans and reports; drop build output and big profiles
__pycache__/
*.pyc
build/
*.o
*.so
*.cubin
*.fatbin
*.hsaco
profiles/**/*.ncu-rep
profiles/**/*.nsys-rep
profiles/**/*.sqlite
.*.tmp
"""


@dataclass
class Workspace:
    """An existing workspace: its folder and `workspace.json`."""

    path: Path
    config: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.config.get("name", self.path.name))

    @property
    def kernel_file(self) -> str:
        return str(self.config["kernel_file"])

    @property
    def memory_dir(self) -> Path:
        return self.path / "memory"

    def wiki_dirs(self) -> list[str]:
        return [str(d) for d in self.config.get("wiki", [])]


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def workspaces_root(root: str | None) -> Path:
    """`root` if given, else `$KERNELPILOT_WORKSPACES`, else `./kernelpilot-workspaces`."""
    chosen = root or os.environ.get(ROOT_ENV) or DEFAULT_ROOT
    try:
        return Path(chosen).expanduser().resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError before Python 3.13), ENAMETOOLONG
        raise InputFileError(
            f"workspaces root {chosen[:200]!r} cannot be resolved ({exc})",
            "give a folder path (not a symbolic link loop) as --root or $KERNELPILOT_WORKSPACES",
        ) from exc


def validate_name(name: str) -> str:
    """Refuse names that could escape the root or confuse a shell: separators, '..', odd characters."""
    if "/" in name or "\\" in name or os.sep in name:
        raise WorkspaceNameError(
            f"workspace name {name!r} contains a path separator", "give a plain name such as gemm-bf16-h100"
        )
    if ".." in name:
        raise WorkspaceNameError(f"workspace name {name!r} contains '..'", "give a plain name without '..'")
    if not _NAME_RE.match(name):
        raise WorkspaceNameError(
            f"workspace name {name!r} must start with a letter or digit and use only letters, digits, "
            "'.', '_' or '-' (at most 128 characters)",
            "give a plain name such as gemm-bf16-h100",
        )
    return name


def locate(workspace: str, root: str | None = None) -> Workspace:
    """Find a workspace by folder path, else by name under the root."""
    candidates: list[Path] = []
    given = Path(workspace).expanduser()
    candidates.append(given)
    if "/" not in workspace and "\\" not in workspace and ".." not in workspace:
        candidates.append(workspaces_root(root) / workspace)
    for cand in candidates:
        cfg_path = cand / CONFIG_FILE
        if path_kind(cfg_path) not in ("missing", "not a directory"):
            # the guarded reader (kind, size, depth, number length): a FIFO here blocked, deep nesting was a
            # RecursionError (issue 41)
            config = readers.read_json(
                cfg_path, "workspace.json", hint="restore it from git (git checkout workspace.json)"
            )
            if not isinstance(config, dict) or "kernel_file" not in config:
                raise InputFileError(f"{cfg_path} lacks 'kernel_file'", "restore it from git")
            return Workspace(cand.resolve(), config)
    tried = ", ".join(str(c) for c in candidates)
    raise WorkspaceNotFoundError(
        f"no kernelpilot workspace at {workspace!r} (looked for {CONFIG_FILE} in: {tried})",
        "give the workspace folder path, or its name with --root; create one with `kernelpilot "
        "workspace init`",
    )


def hardware_for(ws_config: dict[str, Any], measured_time_us: float | None = None) -> hardware.HardwareInfo:
    """Cited specs and roofline for a workspace's task context (optionally with a measured time)."""
    return hardware.gather(
        measured_time_us=measured_time_us,
        platform=str(ws_config["platform"]),
        dtype=ws_config.get("dtype"),
        flops=ws_config.get("flops"),
        bytes_moved=ws_config.get("bytes_moved"),
        roofline_args=ws_config.get("roofline_args"),
        wiki_dirs=[str(d) for d in ws_config.get("wiki", [])],
    )


def audit_files(paths: list[Path], wiki_dirs: list[str], hw: hardware.HardwareInfo) -> str:
    """Run the citation audit on written files; raise CitationError on any problem."""
    render.assert_no_uncited_specs(paths, hw)
    markdown = [p for p in paths if p.suffix.lower() not in (".html", ".htm")]
    others = [p for p in paths if p not in markdown]
    with tempfile.TemporaryDirectory(prefix="kp-audit-") as tmpdir:
        # HTML escapes `<-`; audit its citations through a Markdown extract, one per line.
        for i, p in enumerate(others):
            extract = Path(tmpdir) / f"{i}-{p.stem}.md"
            extract.write_text("".join(f"- {c}\n" for c in render.citation_lines(p)), encoding="utf-8")
            markdown.append(extract)
        problems = hardware.audit(markdown, wiki_dirs)
    if problems is None:
        return "skipped: kernelpilot.wiki not installed (no spec lines written)"
    if problems:
        raise CitationError(
            "citation audit failed on rendered files: " + "; ".join(problems[:5]),
            "the wiki changed under the workspace or a template forged a number; re-render "
            "after fixing the wiki",
        )
    return "passed"


def init_workspace(req: InitWorkspaceRequest) -> InitWorkspaceResult:
    name = validate_name(req.name)
    kernel_src = Path(req.kernel).expanduser()
    if not kernel_src.is_file():
        raise InputFileError(
            f"kernel file {req.kernel!r} does not exist or is not a file",
            "give the path of the kernel source",
        )
    kernel_name = kernel_src.name
    if kernel_name in RESERVED_KERNEL_NAMES:
        raise InvalidArgumentError(
            f"kernel file name {kernel_name!r} clashes with a workspace file", "rename the kernel file"
        )
    for label, value in (("platform", req.platform), ("framework", req.framework)):
        if not value.strip():
            raise InvalidArgumentError(f"--{label} is empty", f"give the {label}")
    _check_roofline_args(req)
    root = workspaces_root(req.root)
    target = root / name
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise WorkspaceExistsError(
            f"target {target} already exists and is not empty",
            "choose another name, or remove the folder if it is an abandoned workspace",
        )
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{name}.init-"))
    try:
        result = _build(tmp, req, name, kernel_src)
        if target.exists():
            target.rmdir()
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    result.workspace = str(target)
    return result


ROOFLINE_ARGS_HINT = (
    "add the op with --roofline-args, the fields of `kernelpilot roofline` as inline JSON or a JSON file, "
    """e.g. --roofline-args '{"op": "softmax", "rows": 32768, "cols": 4096}' (gemm: m, n, k; elementwise: """
    "numel, inputs, outputs, flops_per_element; attention: batch, heads, seq_q, head_dim), or give --flops "
    "and --bytes-moved; --allow-tbd creates the workspace without them"
)


def _check_roofline_args(req: InitWorkspaceRequest) -> None:
    """Refuse to leave Roofline and Stop Conditions TBD silently, and reject roofline args the roofline
    would reject (a wiki gap may still leave them TBD: the README then names the gap)."""
    if req.roofline_args is None:
        if (req.flops is None or req.bytes_moved is None) and not req.allow_tbd:
            raise InvalidArgumentError(
                "workspace init would leave Roofline and Stop Conditions TBD: no op description "
                "(--roofline-args) and no --flops/--bytes-moved",
                ROOFLINE_ARGS_HINT,
            )
        return
    problem = hardware.roofline_args_problem(req.platform, req.dtype, req.roofline_args)
    if problem:
        raise InvalidArgumentError(f"--roofline-args rejected by the roofline: {problem}", ROOFLINE_ARGS_HINT)


def _build(tmp: Path, req: InitWorkspaceRequest, name: str, kernel_src: Path) -> InitWorkspaceResult:
    try:
        shutil.copy2(kernel_src, tmp / kernel_src.name)
    except OSError as exc:
        raise InputFileError(
            f"cannot read kernel file {req.kernel!r}: {exc.strerror}", "check its permissions"
        ) from exc
    for sub in SUBDIRS:
        (tmp / sub).mkdir()
        (tmp / sub / ".gitkeep").write_text("", encoding="utf-8")
    write_text_atomic(tmp / ".gitignore", GITIGNORE)
    config: dict[str, Any] = {
        "schema_version": 1,
        "name": name,
        "kernel_file": kernel_src.name,
        "kernel_origin": str(kernel_src.resolve()),
        "platform": req.platform.strip(),
        "framework": req.framework.strip(),
        "dtype": req.dtype,
        "shape": list(req.shape),
        "goal": req.goal,
        "flops": req.flops,
        "bytes_moved": req.bytes_moved,
        "roofline_args": req.roofline_args,
        "wiki": [str(Path(d).expanduser().resolve()) for d in req.wiki],
        "created": now_iso(),
    }
    hw = hardware_for(config)
    config["gpu_id"] = hw.gpu_id
    if config["flops"] is None and config["bytes_moved"] is None and hw.flops and hw.bytes_moved:
        config["flops"], config["bytes_moved"] = hw.flops, hw.bytes_moved
        config["flops_source"] = "counted by kernelpilot roofline from --roofline-args"
    write_json_atomic(tmp / "workspace.json", config)
    readme, tbd = render.render_readme(config, hw)
    write_text_atomic(tmp / "README.md", readme)
    audit = audit_files([tmp / "README.md"], config["wiki"], hw)
    gitops.init_repo(tmp)
    commit = gitops.commit_all(tmp, f"init workspace {name}: {kernel_src.name} on {config['platform']}")
    files = sorted(
        p.relative_to(tmp).as_posix()
        for p in tmp.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(tmp).parts
    )
    return InitWorkspaceResult(
        workspace=str(tmp),
        name=name,
        kernel_file=kernel_src.name,
        commit=commit,
        files=files,
        gpu_id=hw.gpu_id,
        spec_lines=len(hw.spec_citations),
        gpu_note=hw.gpu_note,
        roofline="computed" if hw.roofline_text else f"TBD: {hw.roofline_reason}",
        audit=audit,
        tbd=tbd,
    )

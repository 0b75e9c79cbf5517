"""Issues 41 and 42: path and JSON arguments go through the guarded readers on every surface.

A JSON argument (inline, or a file path) is parsed with the readers' limits (depth, number length); a leading
BOM marks inline JSON, not a path; a path that is not a regular file is named for what it is (a directory, a
FIFO, a link to a device, a name the file system cannot hold, a symlink loop), never "does not exist" and
never opened; a lone surrogate or NUL in any text argument is refused where the request is built.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from kernelpilot.experiments.api import ExpGetRequest
from kernelpilot.foundation import readers
from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError
from kernelpilot.foundation.validation import json_argument_text, load_json_argument, path_kind
from kernelpilot.profile.errors import ProfileFormatError
from kernelpilot.profile.rocprof import kernel_symbols, parse_json
from kernelpilot.suggest.core import suggest_experiments
from kernelpilot.suggest.models import SuggestRequest
from kernelpilot.workspace.core import locate, workspaces_root

DEEP = "[" * 50_000 + "]" * 50_000
LONG_INT = "9" * 5_000


def test_inline_json_with_a_bom_is_inline_json() -> None:
    assert load_json_argument('\ufeff{"a": 1}', "--patch") == {"a": 1}
    assert json_argument_text('\ufeff{"a": 1}') == '{"a": 1}'


@pytest.mark.parametrize(
    "text", [DEEP, f'{{"n": {LONG_INT}}}', '{"x": 1e999}'], ids=["deep", "digits", "inf"]
)
def test_inline_json_over_the_limits_is_a_typed_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="--patch"):
        load_json_argument(text, "--patch")
    f = tmp_path / "arg.json"
    f.write_text(text)
    with pytest.raises(InvalidArgumentError):
        load_json_argument(str(f), "--patch")


def _entries(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "to_fifo").symlink_to(tmp_path / "fifo")
    (tmp_path / "to_zero").symlink_to("/dev/zero")  # a link only: the device is never opened
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    return {
        "folder": tmp_path / "folder",
        "fifo": tmp_path / "fifo",
        "to_fifo": tmp_path / "to_fifo",
        "to_zero": tmp_path / "to_zero",
        "loop": tmp_path / "loop",
        "dangling": tmp_path / "dangling",
        "long": tmp_path / ("n" * 300),
    }


_SAYS = {
    "folder": "is a directory",
    "fifo": "is not a regular file",
    "to_fifo": "is not a regular file",
    "to_zero": "is not a regular file",
    "loop": "symbolic links",
    "dangling": "dangling symbolic link",
    "long": "name too long",
}


@pytest.mark.parametrize("name", sorted(_SAYS))
def test_a_path_that_is_not_a_file_is_named_for_what_it_is(tmp_path: Path, name: str) -> None:
    path = _entries(tmp_path)[name]
    assert json_argument_text(str(path)) == str(path)  # not opened (a FIFO would block here)
    with pytest.raises(InputFileError) as info:
        load_json_argument(str(path), "--bottleneck")
    assert _SAYS[name] in info.value.message.lower() and "does not exist" not in info.value.message
    assert info.value.hint


def test_path_kind_names_each_kind(tmp_path: Path) -> None:
    e = _entries(tmp_path)
    (tmp_path / "file.json").write_text("{}")
    assert path_kind(tmp_path / "file.json") == "file"
    assert path_kind(tmp_path / "missing") == "missing"
    assert path_kind(e["folder"]) == "directory"
    assert path_kind(e["to_zero"]) == "special"
    assert path_kind(e["dangling"]) == "dangling symbolic link"
    assert path_kind(e["long"]) == "file name too long"


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="no /proc (not Linux)")
def test_a_link_to_proc_self_mem_is_a_typed_error(tmp_path: Path) -> None:
    link = tmp_path / "mem.json"
    link.symlink_to("/proc/self/mem")
    with pytest.raises(InputFileError, match="cannot read"):
        load_json_argument(str(link), "--isa")


def test_suggest_history_ledger_is_read_with_the_limits(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text('{"status": "ok"}\n' + DEEP + "\n")
    verdict = '{"kernel": "k", "verdict": "memory_bound"}'
    with pytest.raises(readers.ReaderError, match="nested more than"):
        suggest_experiments(SuggestRequest(bottleneck=verdict, history=str(tmp_path)))
    os.mkfifo(tmp_path / "fifo.jsonl")
    with pytest.raises(InputFileError, match="not a regular file"):
        suggest_experiments(SuggestRequest(bottleneck=verdict, history=str(tmp_path / "fifo.jsonl")))


@pytest.mark.parametrize("text", [DEEP, f'{{"rocprofiler-sdk-tool": [{{"x": {LONG_INT}}}]}}'])
def test_rocprofv3_json_over_the_limits_is_a_typed_error(text: str) -> None:
    with pytest.raises(ProfileFormatError, match=r"results\.json"):
        parse_json(text, "results.json")
    with pytest.raises(ProfileFormatError):
        kernel_symbols(text, "results.json")
    assert kernel_symbols('{"rocprofiler-sdk-tool": [7, {"kernel_symbols": "x"}]}') == []


def test_workspace_json_and_root_through_the_guards(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "workspace.json").write_text(DEEP)
    with pytest.raises(readers.ReaderError, match="nested more than"):
        locate(str(ws))
    (ws / "workspace.json").unlink()
    os.mkfifo(ws / "workspace.json")
    with pytest.raises(InputFileError, match="not a regular file"):
        locate(str(ws))
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(InputFileError, match="cannot be resolved"):
        workspaces_root(str(tmp_path / "loop"))


def test_a_lone_surrogate_or_nul_in_an_argument_is_refused_by_name() -> None:
    for bad in ("a\ud800", "a\udcff", "a\x00b"):
        with pytest.raises(ValidationError, match="id holds a NUL or a lone UTF-16 surrogate"):
            ExpGetRequest(id=bad)


def test_cli_refuses_a_non_utf8_argument(run_cli) -> None:  # type: ignore[no-untyped-def]
    arg = os.fsdecode(b"r\xff")  # what Python makes of a non-UTF-8 byte in argv
    cli = run_cli("exp", "get", arg, "--json")
    assert cli.code == 2 and "lone UTF-16 surrogate" in cli.err and cli.out == ""


@pytest.mark.parametrize("case", ["long_name", "loop", "file_as_folder", "proc_mem"])
def test_capability_turns_a_path_the_os_refuses_into_a_typed_error(tmp_path: Path, case: str) -> None:
    """Capability.invoke: ENAMETOOLONG, ELOOP and EIO anywhere, ENOTDIR/EISDIR on the user's own path, become
    InputFileError naming the argument (the MCP fuzz found them in four tools' `Path.exists()` calls and in
    a read of /proc/self/mem)."""
    from kernelpilot.capabilities import all_capabilities
    from kernelpilot.foundation.errors import KernelpilotError

    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "mem").symlink_to("/proc/self/mem")
    tool, field, path = {
        "long_name": ("isa_occupancy", "file", str(tmp_path / ("n" * 300))),
        "loop": ("isa_occupancy", "file", str(tmp_path / "loop" / "x.cubin")),
        "file_as_folder": ("isa_occupancy", "file", "/proc/self/status/x.cubin"),
        "proc_mem": ("profile_hotspots", "path", str(tmp_path / "mem")),
    }[case]
    cap = next(c for c in all_capabilities() if c.tool == tool)
    with pytest.raises(KernelpilotError) as info:
        cap.invoke(cap.request.model_validate({field: path, **_required(cap, field)}))
    assert info.value.hint
    if case == "long_name":  # raised by Path.exists() inside the tool: named by Capability.invoke
        assert isinstance(info.value, InputFileError)
        assert info.value.message.startswith("--file path ") and "File name too long" in info.value.message
    if case == "proc_mem":  # read() fails with EIO and names no file
        assert info.value.message == "reading an input file: Input/output error"


def test_an_argument_too_long_for_a_child_process_is_typed() -> None:
    """The MCP fuzz (seed 4142) gave `workload_run` a 1 MB `spec`; the child's argv failed with E2BIG."""
    from kernelpilot.capabilities import all_capabilities

    cap = next(c for c in all_capabilities() if c.tool == "workload_run")
    with pytest.raises(InvalidArgumentError, match="too long to hand to a child process"):
        cap.invoke(cap.request.model_validate({"spec": "\\" * 1_000_000}))


@pytest.mark.parametrize("tool", ["profile_parse", "profile_hotspots", "workload_read", "workload_isolate"])
def test_input_readers_name_a_folder_and_a_device_link_for_what_they_are(tmp_path: Path, tool: str) -> None:
    """Issue 42: a directory, or a link to /dev/zero, given as the input file was "does not exist"."""
    from kernelpilot.capabilities import all_capabilities

    cap = next(c for c in all_capabilities() if c.tool == tool)
    (tmp_path / "zero").symlink_to("/dev/zero")  # a link only: the device is never opened
    for path, says in ((tmp_path, "is a directory"), (tmp_path / "zero", "is not a regular file")):
        with pytest.raises(InputFileError) as info:
            cap.invoke(cap.request.model_validate({"path": str(path), **_required(cap, "path")}))
        assert says in info.value.message and "does not exist" not in info.value.message


def _required(cap, field: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Plain values for the other required fields of `cap`'s request."""
    out: dict[str, object] = {}
    for name, info in cap.request.model_fields.items():
        if name != field and info.is_required():
            out[name] = "k"
    return out

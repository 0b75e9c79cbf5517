"""Issue 41: one output-path policy (`foundation.atomic.output_path`) for every file kernelpilot writes.

A FIFO, a socket (the stand-ins here for a device node: tests never touch real ones), a directory, a link
loop, a dangling link whose target folder is missing, an over-long name and a missing folder are refused
with an `OutputPathError` naming the argument, and left as they were; a missing folder is made only with
`mkdir=True` (`--mkdir`); no temp file survives a failure.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelpilot.foundation.atomic import output_path, write_text_atomic
from kernelpilot.foundation.errors import OutputPathError

FIX = Path(__file__).resolve().parent.parent / "fixtures"
TRACE = FIX / "workload" / "h100_decode_trace.json"


@pytest.fixture
def specials(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A FIFO and a bound UNIX socket (a device-like target: not a regular file, must stay what it is)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(sock_path))
    try:
        yield {"fifo": fifo, "socket": sock_path}
    finally:
        sock.close()


def _same(path: Path, kind: object) -> bool:
    return bool(kind(os.lstat(path).st_mode))  # type: ignore[operator]


def _no_temp_files(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_fifo_socket_and_directory_are_refused_and_untouched(
    specials: dict[str, Path], tmp_path: Path
) -> None:
    for path, kind, check in (
        (specials["fifo"], "FIFO", stat.S_ISFIFO),
        (specials["socket"], "socket", stat.S_ISSOCK),
        (tmp_path, "directory", stat.S_ISDIR),
    ):
        with pytest.raises(OutputPathError, match=rf"--out .*is a.* {kind}") as err:
            write_text_atomic(path, "x", arg="--out")
        assert err.value.hint and _same(path, check)
    assert _no_temp_files(tmp_path)


def test_a_link_to_a_fifo_is_refused_through_the_link(specials: dict[str, Path], tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(specials["fifo"])
    with pytest.raises(OutputPathError, match="FIFO"):
        write_text_atomic(link, "x", arg="--html")
    assert link.is_symlink() and stat.S_ISFIFO(os.stat(link).st_mode)


def test_link_loop_dangling_link_and_over_long_names(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(OutputPathError, match="cannot be reached"):
        output_path(loop, "--out")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "no-such-folder" / "x.json")
    with pytest.raises(OutputPathError, match="link's target"):
        output_path(dangling, "--out")
    assert not (tmp_path / "no-such-folder").exists() and dangling.is_symlink()
    with pytest.raises(OutputPathError, match="256 bytes"):
        output_path(tmp_path / ("n" * 256), "--svg")
    with pytest.raises(OutputPathError, match="over 4,096"):
        output_path("/".join(["d" * 200] * 25), "--svg")
    with pytest.raises(OutputPathError, match="NUL"):
        output_path(str(tmp_path / "a\0b"), "--svg")
    with pytest.raises(OutputPathError, match="not encodable"):
        output_path(str(tmp_path / "a\ud800"), "--svg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "loop"]


def test_a_name_of_255_bytes_in_multibyte_characters_is_written(tmp_path: Path) -> None:
    """The temp file's name is cut in bytes, so the longest legal name still gets a legal temp name."""
    name = "\u00e9" * 127 + "x"  # 255 bytes in UTF-8
    write_text_atomic(tmp_path / name, "ok")
    assert (tmp_path / name).read_text() == "ok" and _no_temp_files(tmp_path)


def test_a_dangling_link_into_an_existing_folder_writes_its_target(tmp_path: Path) -> None:
    link = tmp_path / "r.json"
    link.symlink_to(tmp_path / "real.json")
    assert write_text_atomic(link, "new") == tmp_path / "real.json"
    assert link.is_symlink() and (tmp_path / "real.json").read_text() == "new"


def test_missing_folders_are_made_only_when_asked(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "out.json"
    with pytest.raises(OutputPathError, match=r"does not exist.*--mkdir"):
        write_text_atomic(deep, "x", arg="--out", mkdir=False)
    with pytest.raises(OutputPathError) as err:
        write_text_atomic(deep, "x", arg="--manifest")  # a command without --mkdir does not offer it
    assert "--mkdir" not in str(err.value)
    assert not (tmp_path / "a").exists()
    write_text_atomic(deep, "x", mkdir=True)
    assert deep.read_text() == "x"


def test_proc_files_are_refused_and_unchanged() -> None:
    before = Path("/proc/self/comm").read_bytes()
    with pytest.raises(OutputPathError, match="cannot write"):
        write_text_atomic(Path("/proc/self/comm"), "hijack", arg="--out")
    assert Path("/proc/self/comm").read_bytes() == before


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")

    def lines() -> Iterator[str]:
        yield "new\n"
        raise RuntimeError("the store failed half way")

    with pytest.raises(RuntimeError):
        write_text_atomic(out, lines())
    assert out.read_text() == "old\n" and _no_temp_files(tmp_path)


# ---- the CLI: every command that writes a file ----


def _writers(tmp: Path, target: Path) -> list[list[str]]:
    t = str(target)
    roof = ["roofline", "h100-sxm5", "--op", "gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "bf16"]
    return [
        ["workload", "read", str(TRACE), "--out", t],
        ["workload", "read", str(TRACE), "--html", t],
        ["workload", "report", str(tmp / "r.json"), "--out", t],
        [*roof, "--svg", t],
        ["isa", "resources", str(FIX / "isa" / "nvidia" / "kernels.sm_100.cubin"), "--manifest", t],
        ["exp", "export", "--db", str(tmp / "e.db"), t],
        ["sweep", "report", "sweep-none", "--db", str(tmp / "e.db"), "--html", t],
        ["ceilings", "measure", "--out", t],
    ]


def test_cli_refuses_a_fifo_and_a_device_like_target_untouched(
    run_cli, specials: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 41 acceptance: each writing command, given a FIFO or a socket, exits with a typed error naming
    its argument; the FIFO and the socket are still a FIFO and a socket (nothing replaced them)."""
    assert run_cli("workload", "read", str(TRACE), "--out", str(tmp_path / "r.json")).code == 0
    for name, check in (("fifo", stat.S_ISFIFO), ("socket", stat.S_ISSOCK)):
        target = specials[name]
        for argv in _writers(tmp_path, target):
            r = run_cli(*argv)
            assert r.code == 2, (argv, r.err)
            assert "kernelpilot: error:" in r.err and "not a regular file" in r.err, (argv, r.err)
            assert argv[argv.index(str(target)) - 1] in r.err or argv[:2] == ["exp", "export"], r.err
            assert _same(target, check), argv
    assert _no_temp_files(tmp_path)
    assert not (tmp_path / "e.db").exists()  # refused before the store was opened (and so created)


def test_cli_mkdir_flag(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "new" / "dir" / "r.json"
    r = run_cli("workload", "read", str(TRACE), "--out", str(out))
    assert r.code == 2 and "--mkdir" in r.err and not (tmp_path / "new").exists()
    r = run_cli("workload", "read", str(TRACE), "--out", str(out), "--mkdir")
    assert r.code == 0, r.err
    assert out.is_file() and out.read_text().startswith("{")

"""`profile att` on bad input: typed errors naming the file (CLI and library), plus a fuzz of the readers."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelpilot.foundation.errors import InputFileError, KernelpilotError
from kernelpilot.profile.att.analysis import profile_att
from kernelpilot.profile.att.models import AttRequest
from kernelpilot.profile.errors import AttFormatError

SMALL = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "profile"
    / "att"
    / "small"
    / "ui_output_agent_32235_dispatch_44"
)
WAVE = "se3_sm0_sl0_wv0.json"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    dst = tmp_path / SMALL.name
    shutil.copytree(SMALL, dst)
    return dst


def run(p: Path) -> None:
    profile_att(AttRequest(path=str(p)))


def expect(p: Path, name: str, words: str) -> None:
    with pytest.raises(AttFormatError) as ei:
        run(p)
    assert name in ei.value.message and words in ei.value.message, ei.value.message
    assert ei.value.hint


def test_missing_folder_and_not_a_dispatch(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="does not exist"):
        run(tmp_path / "nope")
    (tmp_path / "x.txt").write_text("hi")
    expect(tmp_path, str(tmp_path), "not an ATT dispatch folder")
    expect(tmp_path / "x.txt", "x.txt", "not an ATT dispatch folder")


def test_truncated_code_json(folder: Path) -> None:
    p = folder / "code.json"
    p.write_bytes(p.read_bytes()[:5000])
    expect(folder, "code.json", "truncated or invalid JSON")


def test_unknown_version_and_header(folder: Path) -> None:
    p = folder / "code.json"
    doc = json.loads(p.read_text())
    doc["version"] = "9.1.0"
    p.write_text(json.dumps(doc))
    expect(folder, "code.json", "unknown ATT format version '9.1.0'")
    doc["version"] = "3.0.0"
    doc["header"] = "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency"
    p.write_text(json.dumps(doc))
    expect(folder, "code.json", "lacks column(s) Stall, Idle")


def test_missing_and_truncated_wave_files(folder: Path) -> None:
    w = folder / WAVE
    data = w.read_bytes()
    w.write_bytes(data[: len(data) // 2])
    expect(folder, WAVE, "truncated JSON")
    w.unlink()
    expect(folder, WAVE, "missing")
    doc = json.loads(data)
    doc["num_insts"] += 1
    w.write_text(json.dumps(doc))
    expect(folder, WAVE, "instruction records")


def test_truncated_wstates_and_occupancy(folder: Path) -> None:
    (folder / "wstates2.json").write_text('{"name":"wstates2.json","state":[1,2')
    expect(folder, "wstates2.json", "truncated or invalid JSON")
    shutil.copy(SMALL / "wstates2.json", folder / "wstates2.json")
    (folder / "occupancy.json").write_text('{"0": [[1, 2, "x", 0, 1, 1]]}')
    expect(folder, "occupancy.json", "rows are not")


def test_cli_error_no_traceback(run_cli, folder: Path) -> None:
    (folder / "code.json").write_text("{")
    r = run_cli("profile", "att", str(folder))
    assert r.code != 0 and "code.json" in r.err and "Traceback" not in r.err + r.out


_FILES = ["code.json", WAVE, "wstates3.json", "filenames.json", "occupancy.json", "realtime.json"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(_FILES),
    cut=st.floats(min_value=0.0, max_value=1.0),
    pos=st.floats(min_value=0.0, max_value=1.0),
    junk=st.binary(min_size=0, max_size=8),
)
def test_fuzz_readers_only_typed_errors(name: str, cut: float, pos: float, junk: bytes) -> None:
    """Any truncation or splice of one file gives a result or a KernelpilotError, never another exception."""
    with tempfile.TemporaryDirectory() as tmp:
        dst = Path(tmp) / SMALL.name
        shutil.copytree(SMALL, dst)
        p = dst / name
        data = p.read_bytes()
        data = data[: int(len(data) * cut)]
        at = int(len(data) * pos)
        p.write_bytes(data[:at] + junk + data[at:])
        try:
            res = profile_att(AttRequest(path=str(dst)))
        except KernelpilotError as exc:
            assert exc.message and exc.hint
        else:
            assert res.totals.instructions > 0


def test_absurd_nesting_is_refused_not_miscounted(folder: Path) -> None:
    (folder / WAVE).write_text('{"num_insts":0,"wave":{"instructions":' + "[" * 40000 + "]" * 40000 + "}}")
    expect(folder, WAVE, "absurdly deep brackets")

"""`profile run --profiler rocprofv3 --mode att` with a stand-in rocprofv3 (there is no AMD GPU here)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InvalidArgumentError, ToolTimeoutError
from kernelpilot.profile.att.capture import att_yaml, build_att_argv
from kernelpilot.profile.core import profile_run
from kernelpilot.profile.errors import AttFormatError
from kernelpilot.profile.models import ProfileRunRequest

HERE = Path(__file__).resolve().parent
SMALL = HERE.parent / "fixtures" / "profile" / "att" / "small" / "ui_output_agent_32235_dispatch_44"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    exe = tmp_path / "rocprofv3"
    exe.write_text(f"#!{sys.executable}\n" + (HERE / "fake_rocprofv3_att.py").read_text())
    exe.chmod(0o755)
    monkeypatch.setenv("KERNELPILOT_ROCPROFV3", str(exe))
    monkeypatch.setenv("FAKE_ATT_ARGV", str(tmp_path / "argv.json"))
    monkeypatch.setenv("FAKE_ATT_FOLDER", str(SMALL))
    return tmp_path


def req(tmp: Path, **kw: object) -> ProfileRunRequest:
    return ProfileRunRequest(
        command=[sys.executable, "-c", "print('kernel ran')"],
        profiler="rocprofv3",
        mode="att",
        output_dir=str(tmp / "out"),
        **kw,  # type: ignore[arg-type]
    )


def test_argv_form() -> None:
    r = ProfileRunRequest(
        command=["./app", "-n", "3"],
        mode="att",
        kernel_name="regex:^flash_attn",
        att_target_cu=2,
        att_shader_engine_mask="0x3",
        att_simd_select="0xf",
        att_buffer_size="0x6000000",
        att_iteration_range="[1]",
    )
    assert build_att_argv(r, "/o", "rocprofv3") == [
        "rocprofv3", "--att", "--kernel-trace", "--kernel-include-regex", "^flash_attn",
        "--kernel-iteration-range", "[1]", "--att-target-cu", "2", "--att-shader-engine-mask", "0x3",
        "--att-simd-select", "0xf", "--att-buffer-size", "0x6000000",
        "-d", "/o", "--output-format", "csv", "json", "--", "./app", "-n", "3",
    ]  # fmt: skip
    with pytest.raises(InvalidArgumentError, match="att_shader_engine_mask"):
        build_att_argv(r.model_copy(update={"att_shader_engine_mask": "all"}), "/o")


def test_yaml_form(tmp_path: Path) -> None:
    r = ProfileRunRequest(command=["./app"], mode="att", kernel_name="gemm", att_input="yaml")
    argv = build_att_argv(r, str(tmp_path), "rocprofv3")
    assert argv == ["rocprofv3", "-i", str(tmp_path / "att_input.yaml"), "--", "./app"]
    text = (tmp_path / "att_input.yaml").read_text()
    assert text == att_yaml(r, str(tmp_path))
    assert text.splitlines()[:5] == [
        "jobs:",
        "  -",
        "    advanced_thread_trace: true",
        "    kernel_trace: true",
        '    kernel_include_regex: "gemm"',
    ]
    assert "    att_target_cu: 1" in text and '    att_shader_engine_mask: "0xf"' in text


@pytest.mark.parametrize("form", ["argv", "yaml"])
def test_run_decodes_newest_dispatch(fake: Path, form: str) -> None:
    res = profile_run(req(fake, att_input=form))
    assert res.att is not None and res.path is not None
    assert Path(res.path).name == SMALL.name  # newest folder, not the older dispatch_3 beside it
    assert res.att.totals.waves_sampled == 4 and res.att.totals.instructions == 2069
    argv = json.loads((fake / "argv.json").read_text())
    assert argv[-3:] == [sys.executable, "-c", "print('kernel ran')"]
    assert ("--att" in argv) == (form == "argv") and ("-i" in argv) == (form == "yaml")
    assert "rocprofv3 --att" in res.render_text() and "STALL 34.8%" in res.render_text()


def test_run_reads_kernel_trace_and_agent_info_written_beside(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rp = HERE.parent / "fixtures" / "profile" / "rocprofv3"
    csvs = [str(rp / "discover_kernel_trace.csv"), str(rp / "discover_agent_info.csv")]
    monkeypatch.setenv("FAKE_ATT_CSVS", os.pathsep.join(csvs))
    res = profile_run(req(fake, kernel_name="flash_attn_func_kernel_0"))
    assert res.att is not None and res.att.registers is not None
    assert res.att.registers.arch == "gfx950" and res.att.registers.waves_per_simd == 2
    assert "out_kernel_trace.csv" in res.att.registers.source


def test_run_timeout_and_nothing_written(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_ATT_SLEEP", "5")
    with pytest.raises(ToolTimeoutError):
        profile_run(req(fake, timeout_s=0.5))
    monkeypatch.delenv("FAKE_ATT_SLEEP")
    monkeypatch.setenv("FAKE_ATT_FOLDER", str(fake / "empty"))
    (fake / "empty").mkdir()
    with pytest.raises(AttFormatError, match="no decoded ui_output_agent"):
        profile_run(req(fake))


def test_att_needs_rocprofv3() -> None:
    with pytest.raises(InvalidArgumentError, match="rocprofv3"):
        profile_run(ProfileRunRequest(command=["./a"], profiler="ncu", mode="att"))

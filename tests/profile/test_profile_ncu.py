"""ncu parsers, runner and normalization against real H100 captures (tests/fixtures/profile/ncu)."""

from __future__ import annotations

import csv
import fnmatch
import gzip
import json
import sys
from pathlib import Path

import pytest
from tests import fixture_paths

from kernelpilot.foundation.errors import (
    PermissionDeniedError,
    ToolFailedError,
    ToolNotFoundError,
    ToolTimeoutError,
)
from kernelpilot.profile.core import profile_hotspots, profile_parse, profile_run
from kernelpilot.profile.errors import NoKernelsProfiledError, ProfileFormatError, ProfilerError
from kernelpilot.profile.models import HotspotsRequest, ProfileParseRequest, ProfileRunRequest
from kernelpilot.profile.ncu_runner import build_ncu_argv

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "ncu"
FAKE = Path(__file__).resolve().parent / "fake_ncu.py"
KERNELS = [
    "vector_add",
    "gemm_naive",
    "gemm_tiled",
    "softmax_rows",
    "transpose_naive",
    "local_array",
    "sync_reduce",
    "dep_chain",
    "cublas_gemm_bf16",
    "triton_axpy",
]
# Units the fixtures use, to compute expected values independently of the parser.
SCALE = {"ns": 1, "us": 1e3, "ms": 1e6, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}


def csv_cell(path: Path, metric: str, row: int = 0) -> float:
    rows = [r for r in csv.reader(path.open()) if len(r) > 10]
    i = rows[0].index(metric)
    return float(rows[2 + row][i].replace(",", "")) * SCALE[rows[1][i]]


def parse(path: Path, **kw: object):
    return profile_parse(ProfileParseRequest(path=str(path), **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("kernel", KERNELS)
def test_raw_full_set_values_equal_csv(kernel: str) -> None:
    path = FIX / f"{kernel}_raw.csv"
    res = parse(path)
    assert len(res.kernels) == 1
    k = res.kernels[0]
    assert k.duration_ns == pytest.approx(csv_cell(path, "gpu__time_duration.sum"), rel=1e-12)
    assert k.dram_bytes_read == pytest.approx(csv_cell(path, "dram__bytes_read.sum"), rel=1e-12)
    assert k.dram_bytes_write == pytest.approx(csv_cell(path, "dram__bytes_write.sum"), rel=1e-12)
    assert res.passes == 38
    assert k.missing == []
    assert k.sm_throughput_pct is not None and k.warp_stalls


@pytest.mark.parametrize("kernel", KERNELS)
def test_minimal_set_values_equal_csv(kernel: str) -> None:
    path = FIX / "minimal" / f"{kernel}_min.csv"
    k = parse(path).kernels[0]
    assert k.duration_ns == csv_cell(path, "gpu__time_duration.sum")
    assert k.dram_bytes_read == csv_cell(path, "dram__bytes_read.sum")
    assert k.passes == 11


def test_base_units_file_agrees_with_auto_units() -> None:
    for kernel in ("vector_add", "cublas_gemm_bf16"):
        a = parse(FIX / f"{kernel}_raw.csv").kernels[0]
        b = parse(FIX / f"{kernel}_raw_base.csv").kernels[0]
        assert a.duration_ns == pytest.approx(b.duration_ns, rel=1e-9)
        assert a.dram_bytes_read == pytest.approx(b.dram_bytes_read, rel=1e-6)
    assert b.duration_ns == 175744.0  # "175,744" ns in the base-units CSV


def test_flops_per_precision() -> None:
    naive = parse(FIX / "minimal" / "gemm_naive_min.csv").kernels[0]
    assert naive.flop_count["fp32"] == 2 * 1024**3  # 1024^3 FFMA thread instructions
    full = parse(FIX / "gemm_naive_raw.csv").kernels[0]  # derived from per-cycle rates in the full set
    assert full.flop_count["fp32"] == pytest.approx(2 * 1024**3, rel=1e-5)
    gemm = parse(FIX / "minimal" / "cublas_gemm_bf16_mint.csv").kernels[0]
    assert gemm.flop_count["tensor_bf16"] == 2 * 4096**3
    assert gemm.flop_per_s["tensor_bf16"] == pytest.approx(2 * 4096**3 / (gemm.duration_ns * 1e-9))


def test_fifty_launch_file() -> None:
    res = parse(FIX / "minimal" / "launches50_min.csv")
    assert len(res.kernels) == 50
    assert [k.launch_id for k in res.kernels] == list(range(50))
    assert res.kernels[8].kernel == "vector_add" and res.kernels[9].kernel == "gemm_naive"
    for i, k in enumerate(res.kernels):
        assert k.duration_ns == csv_cell(FIX / "minimal" / "launches50_min.csv", "gpu__time_duration.sum", i)


def test_details_page() -> None:
    res = parse(FIX / "vector_add_details.csv")
    k = res.kernels[0]
    assert k.source == "ncu details page"
    assert k.duration_ns == pytest.approx(144.61e3)
    assert k.dram_throughput_pct == 81.02 and k.achieved_occupancy_pct == 76.23
    assert k.grid == [131072, 1, 1] and k.block == [256, 1, 1]
    assert any(m.startswith("dram_bytes_read") for m in k.missing)


def test_minimal_mode_matches_full_set_on_device() -> None:
    """Roofline mode (kernelpilot profile run on the H100) vs the full set of the same kernel.

    The issue asks for duration within 3% and DRAM bytes within 2%.
    """
    for kernel in KERNELS:
        full = parse(FIX / f"{kernel}_raw.csv").kernels[0]
        rl = json.loads((FIX / "roofline" / f"{kernel}.json").read_text())
        assert rl["passes"] == 17
        m = rl["kernels"][0]
        assert abs(m["duration_ns"] / full.duration_ns - 1) < 0.03, kernel
        dram_m = m["dram_bytes_read"] + m["dram_bytes_write"]
        dram_f = full.bytes_dram()
        assert dram_f is not None
        assert abs(dram_m - dram_f) <= max(0.02 * dram_f, 4096), kernel


def test_hotspots_map_to_source_lines() -> None:
    res = profile_hotspots(HotspotsRequest(path=str(FIX / "local_array_source_cuda_sass.csv"), top=3))
    k = res.kernels[0]
    assert k.kernel == "local_array"
    assert k.source_lines[0].location is not None and k.source_lines[0].location.endswith("kp_kernels.cu:92")
    assert k.source_lines[0].stall_samples == 1476363.0  # the source row's own sample count in the CSV
    assert k.sass[0].instruction and k.stall_reasons["long_sb"] > k.stall_reasons["lg"]
    sass_only = profile_hotspots(HotspotsRequest(path=str(FIX / "cublas_gemm_bf16_source.csv"), top=5))
    assert sass_only.kernels[0].sass[0].location is None and len(sass_only.kernels[0].sass) == 5
    for kernel in KERNELS:
        profile_hotspots(HotspotsRequest(path=str(FIX / f"{kernel}_source.csv")))


def test_source_without_lineinfo_is_typed_error() -> None:
    with pytest.raises(ProfileFormatError, match="lineinfo"):
        profile_hotspots(HotspotsRequest(path=str(FIX / "cublas_gemm_bf16_source_cuda_sass.csv")))


# ---------------------------------------------------------------- bad input


def test_truncated_csv(tmp_path: Path) -> None:
    text = (FIX / "minimal" / "launches50_min.csv").read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: int(len(text) * 0.7)])
    res = parse(cut)
    assert 0 < len(res.kernels) < 50 and any("truncated" in w for w in res.warnings)
    head = tmp_path / "head.csv"
    head.write_text(text[: text.index("\n", text.index('"ID"')) + 200])
    with pytest.raises(ProfileFormatError):
        parse(head)


def test_renamed_and_na_metrics(tmp_path: Path) -> None:
    text = (FIX / "minimal" / "vector_add_min.csv").read_text()
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(text.replace('"gpu__time_duration.sum"', '"gpu__time_duration_v2.sum"'))
    k = parse(renamed).kernels[0]
    assert k.duration_ns is None and k.flop_per_s == {}
    assert any(m.startswith("duration_ns") and "absent" in m for m in k.missing)
    rows = list(csv.reader([ln for ln in text.splitlines() if ln.startswith('"')]))
    i = rows[0].index("dram__bytes_read.sum")
    rows[2][i] = "n/a"
    na = tmp_path / "na.csv"
    with na.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    k = parse(na).kernels[0]
    assert k.dram_bytes_read is None and k.bytes_dram() is None
    assert any("dram__bytes_read.sum n/a" in m for m in k.missing)


def test_empty_and_foreign_files(tmp_path: Path) -> None:
    empty = tmp_path / "e.csv"
    empty.write_text("")
    with pytest.raises(ProfileFormatError, match="empty"):
        parse(empty)
    junk = tmp_path / "j.csv"
    junk.write_text("a,b\n1,2\n")
    with pytest.raises(ProfileFormatError):
        parse(junk)
    with pytest.raises(NoKernelsProfiledError, match="vector_add"):
        parse(FIX / "messages" / "nomatch.out")


@pytest.fixture
def fake_ncu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    exe = tmp_path / "ncu"
    exe.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
    exe.chmod(0o755)
    monkeypatch.setenv("KERNELPILOT_NCU", str(exe))
    monkeypatch.setenv("FAKE_NCU_ARGV", str(tmp_path / "argv.txt"))
    return tmp_path


def _run(**kw: object):
    return profile_run(ProfileRunRequest(command=["./app", "x"], profiler="ncu", **kw))  # type: ignore[arg-type]


def test_run_with_fake_profiler(fake_ncu: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_CSV", str(FIX / "minimal" / "vector_add_min.csv"))
    seen: list[tuple[float, float | None, str]] = []
    res = profile_run(
        ProfileRunRequest(command=["./app", "x"], profiler="ncu", kernel_name="regex:^vector_add$"),
        lambda d, t=None, m="": seen.append((d, t, m)),
    )
    assert res.kernels[0].duration_ns == 144192.0 and res.passes == 11 and seen
    argv = (fake_ncu / "argv.txt").read_text().split("\n")
    assert argv[:2] == ["--clock-control", "none"] and argv[-2:] == ["./app", "x"]
    assert "regex:^vector_add$" in argv and "--csv" in argv


@pytest.mark.parametrize(
    ("mode", "exc"),
    [("perm", PermissionDeniedError), ("fail", ToolFailedError), ("error", ProfilerError)],
)
def test_run_failures(
    fake_ncu: Path, monkeypatch: pytest.MonkeyPatch, mode: str, exc: type[Exception]
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    with pytest.raises(exc) as info:
        _run()
    if mode == "perm":
        assert "NVreg_RestrictProfilingToAdminUsers=0" in str(info.value)


def test_run_hang_and_nomatch(fake_ncu: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "hang")
    with pytest.raises(ToolTimeoutError):
        _run(timeout_s=1.0)
    monkeypatch.setenv("FAKE_NCU_MODE", "nomatch")
    monkeypatch.setenv("FAKE_NCU_CSV", str(FIX / "messages" / "nomatch.out"))
    with pytest.raises(NoKernelsProfiledError):
        _run()


def test_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELPILOT_NCU", "/nonexistent/ncu")
    with pytest.raises(ToolNotFoundError, match="KERNELPILOT_NCU"):
        _run()


def test_argv_builder() -> None:
    req = ProfileRunRequest(
        command=["python3", "t.py"],
        mode="full",
        kernel_name="gemm",
        launch_skip=2,
        launch_count=3,
        replay_mode="application",
        export="out.ncu-rep",
        import_source=True,
        profile_from_start=False,
    )
    argv = build_ncu_argv(req, "ncu")
    assert argv[:3] == ["ncu", "--clock-control", "none"]
    s = " ".join(argv)
    for part in (
        "--set full",
        "--kernel-name gemm",
        "--launch-skip 2",
        "--launch-count 3",
        "--replay-mode application",
        "--profile-from-start off",
        "--import-source yes",
        "--export out.ncu-rep",
    ):
        assert part in s
    assert "--csv" not in argv and argv[-2:] == ["python3", "t.py"]
    sec = build_ncu_argv(ProfileRunRequest(command=["a"], mode="sections", sections=["SpeedOfLight"]), "ncu")
    assert "--section" in sec and "SpeedOfLight" in sec


@pytest.mark.needs_tool("ncu")
def test_ncu_rep_import() -> None:
    k = parse(FIX / "vector_add.ncu-rep").kernels[0]
    assert k.duration_ns == parse(FIX / "vector_add_raw.csv").kernels[0].duration_ns


def test_cli_parse_and_hotspots(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("profile", "parse", str(FIX / "minimal" / "vector_add_min.csv"), "--json")
    assert r.code == 0 and json.loads(r.out)["kernels"][0]["duration_ns"] == 144192.0
    r = run_cli("profile", "hotspots", str(FIX / "gemm_tiled_source_cuda_sass.csv"), "--top", "2")
    assert r.code == 0 and "kp_kernels.cu:" in r.out
    r = run_cli("profile", "parse", str(FIX / "nope.csv"))
    assert r.code != 0 and "does not exist" in r.err


def test_no_device_paths_leak() -> None:
    """No fixture (any area, gzip read through) holds a build machine's home, temporary or work folder,
    except the files tests/fixture_paths.py lists with why; each allowed file still exists and still holds
    one (a stale exception is removed, not kept)."""
    assert fixture_paths.leaks() == []
    for pattern in fixture_paths.ALLOWED:
        held = [
            p
            for p in fixture_paths.FIXTURES.rglob("*")
            if p.is_file() and fnmatch.fnmatchcase(p.relative_to(fixture_paths.FIXTURES).as_posix(), pattern)
        ]
        assert held, f"ALLOWED names {pattern!r}, which matches no fixture"
        assert any(fixture_paths.LEAK.search(p.read_bytes()) for p in held), f"{pattern!r} holds no path now"


def test_the_leak_check_fails_on_a_planted_path_and_the_scrubber_clears_it(tmp_path: Path) -> None:
    root = tmp_path / "fixtures"
    (root / "area").mkdir(parents=True)
    planted = {
        "area/run.log": "==PROF== Connected to process 9 (/tmp/kp/kp_kernels)\n",
        "area/trace.json": '{"file": "/home/alice/src/kernel.cu", "repo": "/work/main/bench/x.py"}\n',
        "area/note.md": "written to /root/out/measured.md; see https://example.org/tmp/page and ~/tmp/x\n",
    }
    for rel, text in planted.items():
        (root / rel).write_text(text)
    (root / "area" / "ncu.csv.gz").write_bytes(gzip.compress(b"cmd,/Users/bob/a.out\n"))
    assert fixture_paths.leaks(root, {}) == [
        "area/ncu.csv.gz: /Users/bob/a.out",
        "area/note.md: /root/out/measured.md;",
        "area/run.log: /tmp/kp/kp_kernels)",
        "area/trace.json: /home/alice/src/kernel.cu",
    ]
    assert fixture_paths.leaks(root, {"area/*.gz": "why", "area/*.md": "why"}) == [
        "area/run.log: /tmp/kp/kp_kernels)",
        "area/trace.json: /home/alice/src/kernel.cu",
    ]
    for p in root.rglob("*"):
        if p.is_file():
            assert fixture_paths.scrub_file(p)
    assert fixture_paths.leaks(root, {}) == []
    assert (root / "area" / "trace.json").read_text() == (
        '{"file": "<home>/src/kernel.cu", "repo": "<repo>/bench/x.py"}\n'
    )
    assert (root / "area" / "note.md").read_text() == (
        "written to <home>/out/measured.md; see https://example.org/tmp/page and ~/tmp/x\n"
    )
    assert gzip.decompress((root / "area" / "ncu.csv.gz").read_bytes()) == b"cmd,<home>/a.out\n"


def test_passes_from_real_messages_and_units() -> None:
    from kernelpilot.profile.ncu_runner import passes_from_messages
    from kernelpilot.profile.units import parse_number, unit_scale

    assert passes_from_messages((FIX / "messages" / "vector_add.full.out").read_text()) == 38
    assert passes_from_messages((FIX / "messages" / "cublas_gemm_bf16.full.out").read_text()) == 38
    assert passes_from_messages((FIX / "messages" / "badmetric.out").read_text()) == 1
    assert unit_scale("Mbyte") == ("byte", 1e6) and unit_scale("us") == ("ns", 1e3)
    assert unit_scale("Gbyte/s") == ("byte/s", 1e9) and unit_scale("sector/ms") == ("sector/s", 1e3)
    assert unit_scale("Ghz") == ("Hz", 1e9)
    assert parse_number("1,234,567.5") == 1234567.5 and parse_number("(!) n/a") is None


def test_unclosed_quote_is_a_typed_error(tmp_path: Path) -> None:
    # a quote opened and never closed runs one field over the csv module's limit: csv.Error before
    from kernelpilot.profile.core import profile_hotspots, profile_parse
    from kernelpilot.profile.errors import ProfileFormatError
    from kernelpilot.profile.models import HotspotsRequest, ProfileParseRequest

    for name, call in (
        ("vector_add_raw.csv", lambda p: profile_parse(ProfileParseRequest(path=p, kind="ncu_raw"))),
        ("vector_add_source.csv", lambda p: profile_hotspots(HotspotsRequest(path=p))),
    ):
        text = (FIX / name).read_text(encoding="utf-8")
        lines = text.splitlines()
        i = next(n for n, ln in enumerate(lines) if ln.startswith('"')) + 1
        lines[i] = lines[i][:-1] + ',"' + "x" * 140_000  # last cell unterminated, longer than the limit
        bad = tmp_path / name
        bad.write_text("\n".join(lines), encoding="utf-8")
        with pytest.raises(ProfileFormatError, match="not a readable CSV"):
            call(str(bad))

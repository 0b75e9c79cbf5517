"""Issue 41: an ncu raw page is streamed (`profile.ncu_csv.RawPage`), so `profile parse` and `workload read`
of a large page hold what they keep, not the page (a 20,000-launch full-set page peaked at 4.7 GB).

The pages are the real recorded full-set capture (tests/fixtures/profile/ncu/launches50_full_raw.csv.gz,
~2,230 metrics per launch) with its launch rows repeated, as `bench/ncu_csv_memory.py` makes the big one.
"""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import pytest

from kernelpilot.profile.core import profile_parse
from kernelpilot.profile.errors import NoKernelsProfiledError, ProfileFormatError
from kernelpilot.profile.models import ProfileParseRequest
from kernelpilot.profile.ncu_csv import RawPage, parse_raw
from kernelpilot.workload.core import read_workload
from kernelpilot.workload.models import WorkloadReadRequest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from ncu_csv_memory import make_csv  # noqa: E402  (the bench's own generator: one way to make the page)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ncu") / "raw200.csv"
    make_csv(path, 200)
    return path


def test_streamed_page_equals_the_page_read_whole(page: Path) -> None:
    whole = parse_raw(page.read_text(encoding="utf-8"), "p")
    streamed = RawPage.from_file(page, "p")
    kernels = list(streamed)
    assert len(kernels) == 200 and [k.launch_id for k in kernels] == list(range(200))
    assert kernels == whole.kernels and streamed.warnings == whole.warnings == []


def _traced(fn: object) -> tuple[object, int, int]:
    """(result, bytes still held with the result alive, peak bytes) of traced Python allocations."""
    tracemalloc.start()
    try:
        out = fn()  # type: ignore[operator]
        held, peak = tracemalloc.get_traced_memory()
        return out, held, peak
    finally:
        tracemalloc.stop()


def test_reading_holds_the_results_plus_one_row_not_the_page(page: Path) -> None:
    """Read whole, the page's text, lines, rows and values took ~12x its size at once. Streamed, `profile
    parse` peaks at what it returns (its KernelProfiles) plus a bounded amount (the first MiB read to tell
    the format, one row), and `workload read`, which keeps a duration per launch, at a few MiB (its fixed
    costs; the page is 3.2 MB and was read at ~12x that)."""
    size = page.stat().st_size
    res, held, peak = _traced(lambda: profile_parse(ProfileParseRequest(path=str(page))))
    assert len(res.kernels) == 200  # type: ignore[attr-defined]
    assert peak - held < 4 * 2**20, (peak, held, size)
    res, held, peak = _traced(lambda: read_workload(WorkloadReadRequest(path=str(page))))
    assert sum(k.launches_per_step for k in res.kernels) == 200  # type: ignore[attr-defined]
    assert peak < 4 * 2**20 and res.kernels, (peak, size)  # type: ignore[attr-defined]


def test_truncated_last_row_and_no_kernels_from_a_file(page: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.csv"
    data = page.read_bytes()
    cut.write_bytes(data[: len(data) - 5000])
    res = profile_parse(ProfileParseRequest(path=str(cut)))
    assert len(res.kernels) == 199 and "launch row 200" in res.warnings[0]
    none = tmp_path / "none.csv"
    none.write_text(
        "==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\nAvailable Kernels:\n"
        "  1. vector_add\n  2. gemm_tiled\n"
    )
    with pytest.raises(NoKernelsProfiledError, match="vector_add, gemm_tiled"):
        profile_parse(ProfileParseRequest(path=str(none), kind="ncu_raw"))
    header_only = tmp_path / "h.csv"
    header_only.write_text(data.decode().split("\n")[7] + "\n")
    with pytest.raises(ProfileFormatError, match="no complete launch row"):
        profile_parse(ProfileParseRequest(path=str(header_only)))

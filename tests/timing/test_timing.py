"""time_kernel: stats, metric extraction, the callable protocol (CPU fallback here), commands, bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError
from kernelpilot.tasks.store import append_jsonl, read_jsonl
from kernelpilot.timing.callables import CallableError
from kernelpilot.timing.commands import extract_metric
from kernelpilot.timing.core import time_kernel
from kernelpilot.timing.errors import CommandTimeoutError, MetricNotFoundError
from kernelpilot.timing.models import TimeRequest
from kernelpilot.timing.stats import bootstrap_speedup_ci, summarize


def test_summarize_values() -> None:
    s = summarize([10.0, 12.0, 11.0, 13.0, 9.0], cv_threshold=0.2)
    assert (s.median, s.min, s.max, s.q1, s.q3, s.iqr) == (11.0, 9.0, 13.0, 10.0, 12.0, 2.0)
    assert s.cv == pytest.approx(1.5811388 / 11.0)
    assert s.stable and s.verdict == "stable"
    t = summarize([10.0, 12.0, 11.0, 13.0, 9.0])
    assert not t.stable and t.verdict.startswith("unstable (cv 14.37% > 2.00%)")
    with pytest.raises(InvalidArgumentError):
        summarize([])


def test_bootstrap_ci_is_seeded_and_brackets() -> None:
    base = [100.0, 100.2, 99.9, 100.1, 99.8]
    cand = [80.0, 80.1, 79.9, 80.2, 79.8]
    lo, hi = bootstrap_speedup_ci(base, cand, "lower")
    assert 1.24 < lo <= 1.25 <= hi < 1.26
    assert (lo, hi) == bootstrap_speedup_ci(base, cand, "lower")
    _lo2, hi2 = bootstrap_speedup_ci(base, cand, "higher")
    assert hi2 < 1.0


def test_extract_metric_regex_and_json() -> None:
    assert (
        extract_metric("a\ntime_us: 1.5\ntime_us: 2.5\n", "", regex=r"time_us: ([0-9.]+)", json_key=None)
        == 2.5
    )
    assert extract_metric("", "t=3e2", regex=r"t=([0-9.e]+)", json_key=None) == 300.0
    doc = json.dumps({"results": [{"us": 4.25}]})
    assert extract_metric(f"log line\n{doc}\n", "", regex=None, json_key="results.0.us") == 4.25
    with pytest.raises(MetricNotFoundError) as err:
        extract_metric("nothing useful", "warn", regex=r"us=([0-9.]+)", json_key=None)
    assert "nothing useful" in err.value.stderr_tail
    with pytest.raises(MetricNotFoundError):
        extract_metric('{"a": 1}', "", regex=None, json_key="b")
    with pytest.raises(InvalidArgumentError, match="exactly one capture group"):
        extract_metric("x", "", regex=r"(a)(b)", json_key=None)


FACTORY = """
calls = []

def make():
    return lambda: calls.append(1)

def make_rot(rotate=1):
    return [(lambda i=i: calls.append(i)) for i in range(rotate)]

def make_list():
    return [lambda: calls.append("a"), lambda: calls.append("b")]

def boom():
    raise ValueError("no inputs")

def bad():
    return 42
"""


@pytest.fixture
def factory_file(tmp_path: Path) -> Path:
    p = tmp_path / "fac.py"
    p.write_text(FACTORY)
    return p


def test_callable_cpu_fallback_is_labelled(factory_file: Path) -> None:
    res = time_kernel(
        TimeRequest(spec=f"{factory_file}:make", runs=20, warmup=3, device="cpu", l2_flush=True)
    )
    assert res.timer == "cpu_perf_counter_ns" and "CPU FALLBACK" in res.timer_note
    assert "cold mode (L2 flush) ignored: no GPU" in res.timer_note
    assert res.verdict_mode == "cpu" and res.cold is None and res.warm is not None
    assert res.stats.count == 20 and len(res.samples) == 20 and res.unit == "us"
    assert 0 < res.stats.median < 1000
    assert "python" in res.environment["versions"]
    assert "CPU FALLBACK" in res.render_text()


def test_callable_rotation(factory_file: Path, tmp_path: Path) -> None:
    res = time_kernel(
        TimeRequest(spec="fac.py:make_rot", rotate=3, runs=6, warmup=0, device="cpu", workdir=str(tmp_path))
    )
    assert res.rotate == 3
    mod = [m for n, m in sys.modules.items() if n.startswith("_kernelpilot_timed_") and hasattr(m, "calls")]
    assert mod[-1].calls == [0, 1, 2, 0, 1, 2]
    res = time_kernel(TimeRequest(spec=f"{factory_file}:make_list", runs=4, warmup=0, device="cpu"))
    assert res.rotate == 2


def test_callable_bad_specs(factory_file: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="module:function"):
        time_kernel(TimeRequest(spec="nocolon", device="cpu"))
    with pytest.raises(InputFileError):
        time_kernel(TimeRequest(spec="missing/file.py:make", device="cpu"))
    with pytest.raises(CallableError, match="no inputs"):
        time_kernel(TimeRequest(spec=f"{factory_file}:boom", device="cpu"))
    with pytest.raises(InvalidArgumentError, match="closure"):
        time_kernel(TimeRequest(spec=f"{factory_file}:bad", device="cpu"))
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        time_kernel(TimeRequest(device="cpu"))


def test_command_path_regex_and_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    cmd = [sys.executable, "-c", "import random; print(f'k_us: {50 + random.random() * 0.01}')"]
    res = time_kernel(TimeRequest(command=cmd, metric_regex=r"k_us: ([0-9.]+)", runs=4, warmup=1))
    assert res.timer == "command_metric" and res.stats.count == 4 and 50 <= res.stats.median <= 50.01
    assert res.stats.stable
    cli = run_cli(
        "--json",
        "time",
        "--command",
        json.dumps([sys.executable, "-c", 'print(\'{"t": {"us": 7}}\')']),
        "--metric-json-key",
        "t.us",
        "--runs",
        "2",
        "--warmup",
        "0",
    )
    assert cli.code == 0, cli.err
    assert json.loads(cli.out)["stats"]["median"] == 7.0


def test_command_bad_inputs(run_cli) -> None:  # type: ignore[no-untyped-def]
    cli = run_cli("time", "--command", "python bench.py > out.txt", "--metric-regex", "(x)")
    assert cli.code == 2 and "shell string" in cli.err
    with pytest.raises(MetricNotFoundError) as err:
        time_kernel(
            TimeRequest(command=[sys.executable, "-c", "print('hello, no metric')"], metric_regex=r"us=(\d+)")
        )
    assert "hello, no metric" in err.value.stderr_tail
    cli = run_cli(
        "time",
        "--command",
        sys.executable,
        "--command=-c",
        "--command",
        "print(1)",
        "--metric-regex",
        r"us=(\d+)",
    )
    assert cli.code == 1 and "no match" in cli.err and "tool output tail" in cli.err
    # The 0.5 s timeout, not the 30 s sleep, ends it: a finished command would raise no timeout error.
    with pytest.raises(CommandTimeoutError) as terr:
        time_kernel(
            TimeRequest(
                command=[
                    sys.executable,
                    "-c",
                    "import sys,time; print('stuck', file=sys.stderr, flush=True); time.sleep(30)",
                ],
                metric_regex=r"(\d+)",
                timeout_s=0.5,
            )
        )
    assert "stuck" in terr.value.stderr_tail
    cli = run_cli(
        "time",
        "--command",
        sys.executable,
        "--command=-c",
        "--command",
        "import sys; sys.exit(4)",
        "--metric-regex",
        r"(\d+)",
    )
    assert cli.code == 1 and "exited with code 4" in cli.err


def test_ledger_append_is_whole_lines_under_concurrency(tmp_path: Path) -> None:
    import multiprocessing as mp

    path = tmp_path / "ledger.jsonl"
    path.write_text('{"torn": ')  # a writer killed mid-line earlier
    procs = [mp.Process(target=_writer, args=(path, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    records, bad = read_jsonl(path)
    assert bad == [1] and len(records) == 200
    assert sorted((r["w"], r["i"]) for r in records) == [(w, i) for w in range(4) for i in range(50)]


def _writer(path: Path, w: int) -> None:
    for i in range(50):
        append_jsonl(path, {"w": w, "i": i, "pad": "x" * 300})


def test_command_env_strips_instrumentation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    monkeypatch.setenv("NSYS_PROFILING_SESSION_ID", "7")
    code = (
        "import os; print('v=%d' % (len([k for k in os.environ if k.startswith(('CUDA_LAUNCH', 'NSYS_'))])))"
    )
    res = time_kernel(
        TimeRequest(command=[sys.executable, "-c", code], metric_regex=r"v=(\d+)", runs=2, warmup=0)
    )
    assert res.stats.median == 0.0
    assert "stripped from its environment: CUDA_LAUNCH_BLOCKING, NSYS_PROFILING_SESSION_ID" in res.timer_note


@pytest.mark.parametrize("cmd", [["time"], ["task", "create"], ["eval"], ["ledger"], ["suggest"]])
def test_help_renders(run_cli, cmd: list[str]) -> None:  # type: ignore[no-untyped-def]
    out = run_cli(*cmd, "--help")
    assert out.code == 0 and "usage: kernelpilot" in out.out


def test_throttle_reasons_and_machine_warnings() -> None:
    from kernelpilot.timing import environment

    assert environment.throttle_names("0x0000000000000001") == []  # GPU idle is not a slowdown
    assert environment.throttle_names("0x0000000000000024") == [
        "software power cap",
        "software thermal slowdown",
    ]
    assert environment.throttle_names("N/A") == []
    warns = environment.machine_warnings(
        [], [{"index": "0", "throttle_reasons": "0x40"}], ["pid 7 python (900 MiB)"]
    )
    assert "hardware thermal slowdown" in warns[0] and "shared" in warns[1]
    assert environment.machine_warnings([], [{"index": "0", "throttle_reasons": "0x0"}], []) == []

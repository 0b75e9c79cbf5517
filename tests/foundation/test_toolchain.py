import sys

import pytest
from tests.waiting import process_gone, wait_until

from kernelpilot.foundation.errors import (
    InvalidArgumentError,
    PermissionDeniedError,
    ToolFailedError,
    ToolNotFoundError,
    ToolTimeoutError,
)
from kernelpilot.host import toolchain


def test_shell_string_is_refused():
    with pytest.raises(InvalidArgumentError, match="not a shell string"):
        toolchain.run("echo hi")  # type: ignore[arg-type]


def test_captures_output_and_exit_code():
    res = toolchain.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"])
    assert res.returncode == 0 and res.stdout.strip() == "out" and res.stderr.strip() == "err"


def test_missing_program_is_typed():
    with pytest.raises(ToolNotFoundError) as exc:
        toolchain.run(["/nonexistent/kp-no-such-tool", "--version"])
    assert "kp-no-such-tool" in exc.value.message
    assert "KERNELPILOT_KP_NO_SUCH_TOOL" in exc.value.hint


def test_failure_carries_stderr_tail():
    code = "import sys; sys.stderr.write('x' * 10000 + 'THE-END'); sys.exit(3)"
    with pytest.raises(ToolFailedError) as exc:
        toolchain.run([sys.executable, "-c", code])
    assert exc.value.returncode == 3
    assert exc.value.stderr_tail.endswith("THE-END")
    assert len(exc.value.stderr_tail) <= toolchain.STDERR_TAIL_CHARS


def test_timeout_kills_whole_process_group(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    # The child starts a grandchild that would outlive a plain kill of the child.
    code = (
        "import subprocess, sys, time;"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid));"
        "time.sleep(60)"
    )
    # The 1.5 s timeout, not the 60 s sleep, ends the child: a finished child would raise no timeout error.
    with pytest.raises(ToolTimeoutError, match="killed"):
        toolchain.run([sys.executable, "-c", code], timeout_s=1.5)
    grandchild = int(pidfile.read_text())
    wait_until(lambda: process_gone(grandchild), "the grandchild to die with the process group")


def test_permission_refusal_is_recognised(tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text(
        "#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    with pytest.raises(PermissionDeniedError) as exc:
        toolchain.run([str(fake)])
    assert "NVreg_RestrictProfilingToAdminUsers" in exc.value.hint


def test_env_override_wins_and_bad_override_is_reported(tmp_path, monkeypatch):
    fake = tmp_path / "my-ncu"
    fake.write_text("#!/bin/sh\necho 'NVIDIA (R) Nsight Compute Command Line Profiler Version 2099.1.0'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KERNELPILOT_NCU", str(fake))
    assert toolchain.find_tool("ncu") == fake
    assert "2099.1.0" in (toolchain.tool_version("ncu") or "")
    monkeypatch.setenv("KERNELPILOT_NCU", str(tmp_path / "missing"))
    assert toolchain.find_tool("ncu") is None
    with pytest.raises(ToolNotFoundError, match="KERNELPILOT_NCU"):
        toolchain.require_tool("ncu")

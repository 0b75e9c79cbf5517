"""The trust boundary of the isolated judge (docs/guard.md, "The isolated judge"): the runner holds nothing
of the judge, cannot reach the judge's process, the judge refuses a report it did not sign and a contract
that imports the agent's file."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelpilot.guard.models import Contract
from kernelpilot.judge.launch import _verified, run_judge
from kernelpilot.judge.models import JudgeRequest, SideSpec

CASES = Path(__file__).parent / "cases"
CONTRACTS = Path(__file__).parent / "contracts"


def test_the_runner_imports_nothing_of_the_judge() -> None:
    code = (
        "import sys, kernelpilot.runner.serve, kernelpilot.runner.sandbox, kernelpilot.runner.wire\n"
        "print(sorted(m for m in sys.modules if m.startswith('kernelpilot.') and "
        "m.split('.')[1] in ('judge', 'guard', 'tasks')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_a_sandboxed_process_cannot_reach_its_parent() -> None:
    """Inside the runner's Landlock domain: no ptrace access to the parent (its /proc mem), no signal to it;
    its own children stay reachable."""
    code = textwrap.dedent(
        """
        import os, json
        from kernelpilot.runner import sandbox
        from pathlib import Path
        note = sandbox.enter(Path.cwd())
        got = {"note": note}
        try:
            open(f"/proc/{os.getppid()}/mem", "rb").close()
            got["mem"] = "opened"
        except OSError as exc:
            got["mem"] = exc.__class__.__name__
        try:
            os.kill(os.getppid(), 0)
            got["signal"] = "sent"
        except OSError as exc:
            got["signal"] = exc.__class__.__name__
        print(json.dumps(got))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    if not got["note"].startswith("Landlock ABI"):
        pytest.fail(f"Landlock is not available here: {got['note']} (the judge records this as a limit)")
    assert got["mem"] == "PermissionError", got
    if int(got["note"].split()[2].rstrip(":")) >= 6:
        assert got["signal"] == "PermissionError", got


def test_a_report_not_signed_with_evals_key_is_refused() -> None:
    key = os.urandom(32)
    body = json.dumps({"status": "passed", "ratios": [9.0, 9.0]})
    forged = json.dumps(
        {"mac": hmac.new(b"another key", body.encode(), hashlib.sha256).hexdigest(), "report": body}
    )
    got = _verified(key, forged + "\n", "", 0)
    assert got.status == "failed" and "not signed with this eval's key" in got.error
    good = json.dumps({"mac": hmac.new(key, body.encode(), hashlib.sha256).hexdigest(), "report": body})
    assert _verified(key, good + "\n", "", 0).status == "passed"
    assert _verified(key, "", "boom", 1).status == "failed"


def test_a_contract_that_imports_the_agents_file_is_refused(tmp_path: Path) -> None:
    """The judge never runs candidate code, even through the contract's own imports."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "kernel.py").write_text((CASES / "honest_axpy.py").read_text())
    text = (CONTRACTS / "contract_axpy.py").read_text() + "\nfrom kernel import candidate as _c  # noqa\n"
    (repo / "contract_axpy.py").write_text(text)
    contract = Contract(module="contract_axpy.py", candidate="kernel.py:candidate", shapes=[{"n": 1024}],
                        dtype="fp32", device="cpu")  # fmt: skip
    req = JudgeRequest(
        contract=contract, contract_root=str(repo), allowed_files=["kernel.py"],
        sides=[SideSpec(name="candidate", root=str(repo))], checked="candidate", pairs=2, warmup=0,
        timeout_s=60, env=dict(os.environ),
    )  # fmt: skip
    got = run_judge(req, 120)
    assert got.status == "failed" and "a file the agent may edit" in got.error, got.error


def test_the_runner_writes_only_where_a_kernel_needs_to(tmp_path: Path) -> None:
    """Inside the sandbox rooted at a task repository: its own files and the temporary folder are writable;
    the task folder (.kernelpilot), the git folder and anything outside (kernelpilot's own source) are not."""
    repo = tmp_path / "repo"
    (repo / ".kernelpilot" / "tasks" / "t").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "kernel.py").write_text("x = 1\n")
    (repo / ".kernelpilot" / "tasks" / "t" / "ledger.jsonl").write_text("{}\n")
    source = Path(__import__("kernelpilot").__file__).parent / "judge" / "clock.py"
    code = textwrap.dedent(
        f"""
        import json, tempfile
        from pathlib import Path
        from kernelpilot.runner import sandbox
        note = sandbox.enter(Path({str(repo)!r}))
        got = {{"note": note}}
        for name, path in (("own", {str(repo / "kernel.py")!r}), ("tmp", tempfile.gettempdir() + "/kp-sb-ok"),
                           ("ledger", {str(repo / ".kernelpilot/tasks/t/ledger.jsonl")!r}),
                           ("new_task_file", {str(repo / ".kernelpilot/tasks/t/forged.json")!r}),
                           ("git", {str(repo / ".git/config")!r}), ("source", {str(source)!r})):
            try:
                with open(path, "a") as fh:
                    fh.write("")
                got[name] = "written"
            except OSError as exc:
                got[name] = exc.__class__.__name__
        print(json.dumps(got))
        """
    )
    private = tmp_path / "runner-tmp"  # the judge gives each runner its own TMPDIR (judge.procs.private_env)
    private.mkdir()
    env = {**os.environ, "TMPDIR": str(private)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=repo, env=env
    )
    got = json.loads(out.stdout)
    if not got["note"].startswith("Landlock ABI"):
        pytest.fail(f"Landlock is not available here: {got['note']}")
    assert "tamper check alone" not in got["note"], got
    assert got["own"] == "written" and got["tmp"] == "written", got
    for name in ("ledger", "new_task_file", "git", "source"):
        assert got[name] == "PermissionError", got
    assert (repo / ".kernelpilot" / "tasks" / "t" / "ledger.jsonl").read_text() == "{}\n"

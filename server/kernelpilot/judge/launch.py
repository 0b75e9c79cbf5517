"""Eval's side of the judge: start `python -m kernelpilot.judge`, hand it a fresh signing key on its
standard input, and accept only a report signed with that key.

Why signed: the report travels through a pipe only eval and the judge hold, and the runners cannot reach
either process (kernelpilot.runner.sandbox); the signature makes that a check rather than an assumption,
so a report written by anything else is refused as a failure, never read as a verdict.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile

from pydantic import ValidationError

from kernelpilot.judge.models import JudgeReport, JudgeRequest

GRACE_S = 10.0
STDERR_CHARS = 2000


def _failed(why: str) -> JudgeReport:
    return JudgeReport(status="failed", error=why)


def run_judge(req: JudgeRequest, timeout_s: float) -> JudgeReport:
    """The judge's signed report, or a failed one saying why there is none."""
    key = secrets.token_bytes(32)
    fd, path = tempfile.mkstemp(prefix="kernelpilot-judge-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(req.model_dump_json())
        proc = subprocess.Popen(
            [sys.executable, "-m", "kernelpilot.judge", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True, env={**os.environ, **req.env},
        )  # fmt: skip
        try:
            out, err = proc.communicate(key.hex() + "\n", timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                out, err = proc.communicate(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            return JudgeReport(status="timeout", error=f"the judge ran past {timeout_s:g} s and was stopped")
    finally:
        os.unlink(path)
    return _verified(key, out, err, proc.returncode)


def _verified(key: bytes, out: str, err: str, rc: int) -> JudgeReport:
    lines = [ln for ln in out.splitlines() if ln.strip()]
    if not lines:
        return _failed(f"the judge exited with code {rc} and no report:\n{err[-STDERR_CHARS:]}")
    try:
        doc = json.loads(lines[-1])
        mac, body = str(doc["mac"]), str(doc["report"])
    except (json.JSONDecodeError, KeyError, TypeError):
        return _failed(f"the judge's last line is not a report:\n{lines[-1][:500]}\n{err[-STDERR_CHARS:]}")
    want = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, mac):
        return _failed("the judge's report is not signed with this eval's key: refused (forged or corrupted)")
    try:
        return JudgeReport.model_validate_json(body)
    except ValidationError as exc:
        return _failed(f"the judge's report does not validate: {exc.errors()[0]['msg']}")

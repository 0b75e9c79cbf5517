"""`python -m kernelpilot.judge REQUEST_JSON`: the judge process (kernelpilot.judge.session).

Reads the signing key eval generated from its standard input (never from the environment or a file a
runner could read), runs the session and prints one line: `{"mac": HMAC-SHA256(key, report), "report":
report JSON}`. SIGTERM (eval's overall deadline) ends the session through its clean-up, which kills every
runner process.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import signal
import sys
from pathlib import Path
from types import FrameType

from kernelpilot.judge.models import JudgeRequest
from kernelpilot.judge.session import run


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    key = bytes.fromhex(sys.stdin.readline().strip())
    sys.stdin.close()
    signal.signal(signal.SIGTERM, _terminate)
    req = JudgeRequest.model_validate_json(Path(args[0]).read_text(encoding="utf-8"))
    report = run(req).model_dump_json()
    mac = hmac.new(key, report.encode(), hashlib.sha256).hexdigest()
    sys.stdout.write(json.dumps({"mac": mac, "report": report}) + "\n")
    sys.stdout.flush()
    return 0


raise SystemExit(main())

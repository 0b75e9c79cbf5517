"""`kernelpilot compare` of one request, as the process eval's paired timing runs (`tasks.paired`).

Why not `python -m kernelpilot --json compare ...`: the CLI imports every capability's request and result
models before it runs one (0.10-0.13 s a process on the 2-core dev machine, `bench/guard_breakdown.py`),
which each paired eval paid on top of its timing. This entry imports only the comparison and prints the
same thing: the `CompareResult` JSON on stdout, a typed error as the CLI's JSON on stderr, the CLI's exit
codes, so `tasks.paired.compare_outcome` reads either. The guard's `guard.checked` ends the same way.

`python -m kernelpilot.timing.compare_process REQUEST_JSON [RESULT_JSON]` (a `CompareRequest` as JSON in a
file). Given RESULT_JSON, the result is written there instead of stdout: the candidate runs in this process
and may print, which would garble a result read from stdout (eval always passes one).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelpilot.foundation.atomic import write_text_atomic
from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.timing.compare import time_compare
from kernelpilot.timing.models import CompareRequest


def run_request(request: CompareRequest, watch: Any | None = None, result_path: Path | None = None) -> int:
    """Time the request; print its result (stdout; written to `result_path` when given) or its typed error
    (stderr) as `--json` does. `watch`: `time_compare`'s (a guard Watch already running)."""
    try:
        result = time_compare(request, watch=watch)
    except KernelpilotError as exc:
        print(json.dumps(exc.to_dict(), indent=2), file=sys.stderr)
        return exc.exit_code
    if result_path is not None:
        write_text_atomic(result_path, result.model_dump_json(indent=2))
    else:
        print(result.model_dump_json(indent=2), flush=True)
    return result.cli_exit_code()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        print(
            "usage: python -m kernelpilot.timing.compare_process REQUEST_JSON [RESULT_JSON]", file=sys.stderr
        )
        return 2
    try:
        request = CompareRequest.model_validate_json(Path(args[0]).read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        print(f"kernelpilot: error: cannot read the compare request {args[0]}: {exc}", file=sys.stderr)
        return 2
    return run_request(request, result_path=Path(args[1]) if len(args) == 2 else None)


if __name__ == "__main__":
    raise SystemExit(main())

"""kind: honest
family: -
contract: gemm
twin: -
idea: logging to stderr and a tqdm-like progress bar redrawn every call, around a plain torch.mm

issue 40: "logging/printing/progress bars". A logger with a stderr handler logs each call's shape at INFO,
and a text progress bar (`\r[#####.....] calls`) is redrawn on stderr every call; one `print` to stdout on
the first call. None of it touches the output. A correct judge accepts it at about honest_gemm's speed.
"""

import logging
import sys

import torch

_LOG = logging.getLogger("kp_redteam.honest_logging_gemm")
if not _LOG.handlers:
    _LOG.addHandler(logging.StreamHandler(sys.stderr))
    _LOG.setLevel(logging.INFO)
_CALLS = [0]


def candidate(a, b):
    _CALLS[0] += 1
    if _CALLS[0] == 1:
        print(f"honest_logging_gemm: first call, {tuple(a.shape)} x {tuple(b.shape)}", flush=True)
    _LOG.info("gemm call %d: %s x %s", _CALLS[0], tuple(a.shape), tuple(b.shape))
    filled = _CALLS[0] % 11
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (10 - filled)}] {_CALLS[0]} calls")
    return torch.mm(a, b)

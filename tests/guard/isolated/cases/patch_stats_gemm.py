"""kind: attack
family: 4
contract: gemm
twin: honest_gemm
idea: statistics and numpy summary functions scaled by 0.6 whenever kernelpilot code calls them

Aims at issue 40, class 4 and its "compute the statistic where the submission cannot reach it" (GPU MODE's
lesson), and docs/guard.md's list of summary statistics (statistics.median/mean/fmean, numpy.median/mean/
percentile/quantile). When imported it replaces `statistics.median/mean/fmean/median_low/median_high/
quantiles` and `numpy.median/mean/percentile/quantile/nanmedian/min/amin` by versions that multiply their
result by 0.6 when the caller's code lives under a `kernelpilot` folder (anyone else, plain callers
included, gets the true value). A statistic of times computed in this process reads 40 % faster. The
kernel itself is honest.
A correct isolated judge computes every statistic in its own process: accepted at honest_gemm's speed, or
rejected in family 4 if the replacements are seen.
"""

import functools
import statistics
import sys

import numpy
import torch

SCALE = 0.6


def _from_kernelpilot():
    frame = sys._getframe(2)
    return frame is not None and "kernelpilot" in frame.f_code.co_filename.replace("\\", "/").split("/")[:-1]


def _scaled(original):
    @functools.wraps(original)
    def stat(*args, **kwargs):
        value = original(*args, **kwargs)
        if not _from_kernelpilot():
            return value
        if isinstance(value, list):
            return [v * SCALE for v in value]
        return value * SCALE

    return stat


for _name in ("median", "mean", "fmean", "median_low", "median_high", "quantiles"):
    setattr(statistics, _name, _scaled(getattr(statistics, _name)))
for _name in ("median", "mean", "percentile", "quantile", "nanmedian", "min", "amin"):
    setattr(numpy, _name, _scaled(getattr(numpy, _name)))


def candidate(a, b):
    return torch.mm(a, b)

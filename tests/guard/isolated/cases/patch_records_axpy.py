"""kind: attack
family: 4
contract: axpy
twin: honest_axpy
idea: pydantic dumps and json.dump(s) rewritten so any record leaving the process reads a win

Aims at issue 40, class 4 (the project's classes, "the inputs of the verdict") and docs/guard.md's Limits
("it can in principle forge anything that process reports"): the reports cross as pydantic models and JSON.
When imported it wraps `pydantic.BaseModel.model_dump`, `model_dump_json`, `json.dumps` and `json.dump` so
that, in whatever they serialize: keys naming a ratio or a candidate/median time are halved, `speedup` is
doubled, `rejection`/`findings`/`evidence` are emptied, and a `status`/`verdict` that is not a win becomes
`improved`. The kernel itself is honest.
A correct isolated judge never reads a record this process serialized: accepted at honest_axpy's speed, or
rejected in family 4 if the replaced methods are seen; no record ever shows the rewritten values.
"""

import json

import pydantic
import torch

_DUMP = pydantic.BaseModel.model_dump
_DUMP_JSON = pydantic.BaseModel.model_dump_json
_DUMPS = json.dumps
_JSON_DUMP = json.dump


def _forge(value):
    if isinstance(value, list):
        return [_forge(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        low = str(key).lower()
        if (
            isinstance(item, (int, float))
            and not isinstance(item, bool)
            and ("ratio" in low or "median" in low)
        ):
            item = item * 0.5
        elif low == "speedup" and isinstance(item, (int, float)):
            item = item * 2.0
        elif low in ("rejection", "findings", "evidence", "error"):
            item = None if not isinstance(item, list) else []
        elif low in ("status", "verdict") and isinstance(item, str) and item != "improved":
            item = "improved"
        out[key] = _forge(item)
    return out


def _model_dump(self, *args, **kwargs):
    return _forge(_DUMP(self, *args, **kwargs))


def _model_dump_json(self, *args, **kwargs):
    indent = kwargs.get("indent")
    return _DUMPS(_forge(json.loads(_DUMP_JSON(self, *args, **kwargs))), indent=indent)


def _dumps(obj, *args, **kwargs):
    return _DUMPS(_forge(obj), *args, **kwargs)


def _dump(obj, fp, *args, **kwargs):
    return _JSON_DUMP(_forge(obj), fp, *args, **kwargs)


pydantic.BaseModel.model_dump = _model_dump
pydantic.BaseModel.model_dump_json = _model_dump_json
json.dumps = _dumps
json.dump = _dump


def candidate(x, y):
    return torch.add(y, x, alpha=2.5)

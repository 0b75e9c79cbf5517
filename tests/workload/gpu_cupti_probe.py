"""GPU-only probe of the CUPTI facts workload/loaded_cubins.py relies on (run by gpu_cupti_modules.sh, not by
pytest: it needs a GPU, torch and cupti-python). Prints one JSON line per question.

- `layout`: the callback data cupti-python hands a MODULE_LOADED callback (its type and fields), and whether
  the ctypes `CUpti_ModuleResourceData` layout reads the same module id and size as the binding's own
  `ModuleResourceData.from_ptr`; whether each cubin is an ELF cubin and holds nvjet/cudnn symbols.
- `order`: are modules loaded BEFORE subscribing reported again (a matmul runs first, then the subscriber,
  then the same matmul and a new one)? Compare its `nvjet` set with `fresh`'s, which subscribes first.
- `fresh`: subscribe first, then the first matmul only.
- `activity`: does the activity API produce CUPTI_ACTIVITY_KIND_MODULE records (the guide says it does not)?
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _syms(data: bytes) -> list[str]:
    from kernelpilot.workload.loaded_cubins import strtab

    table = strtab(data)
    if table is None:
        return ["<not an ELF cubin>"]
    return [s.decode(errors="replace") for s in table.split(b"\0") if s.startswith((b"nvjet", b"cudnn"))]


def _recorder(seen: list[dict[str, Any]]) -> Any:
    from cupti import cupti  # type: ignore[import-not-found,unused-ignore]

    from kernelpilot.workload.loaded_cubins import ModuleResourceData, image_from_resource

    def cb(_u: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
        row: dict[str, Any] = {"type": type(cbdata).__name__}
        if len(seen) < 2:
            row["fields"] = [a for a in dir(cbdata) if not a.startswith("_")]
        desc = getattr(cbdata, "resource_descriptor", None)
        row["descriptor"] = isinstance(desc, int) and desc != 0
        if row["descriptor"]:
            mine = ModuleResourceData.from_address(desc)
            theirs = cupti.ModuleResourceData.from_ptr(desc, readonly=True)
            row["layout_agrees"] = (mine.moduleId, mine.cubinSize) == (theirs.module_id, theirs.cubin_size)
            img = image_from_resource(cbdata)
            row["bytes"] = len(img.data) if img else None
            row["elf_cubin"] = bool(img and img.data[:4] == b"\x7fELF")
            row["syms"] = _syms(img.data)[:4] if img else []
        seen.append(row)

    sub = cupti.subscribe(cb, None)
    cupti.enable_callback(1, sub, cupti.CallbackDomain.RESOURCE, cupti.CallbackIdResource.MODULE_LOADED)
    return cupti, sub


def _matmul(torch: Any, n: int) -> None:
    a = torch.randn(8, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    (a @ b).sum().item()


def main(mode: str) -> None:
    seen: list[dict[str, Any]] = []
    if mode in ("layout", "fresh"):
        cupti, sub = _recorder(seen)
        import torch  # type: ignore[import-not-found,unused-ignore]

        _matmul(torch, 1024)
        if mode == "layout":
            torch.nn.functional.scaled_dot_product_attention(*(torch.randn(1, 8, 128, 64).cuda().half(),) * 3)
        torch.cuda.synchronize()
        cupti.unsubscribe(sub)
    elif mode == "order":
        import torch

        _matmul(torch, 1024)
        torch.cuda.synchronize()
        cupti, sub = _recorder(seen)
        _matmul(torch, 1024)
        _matmul(torch, 3072)
        torch.cuda.synchronize()
        cupti.unsubscribe(sub)
    elif mode == "activity":
        print(json.dumps({"mode": mode, **_activity()}))
        return
    nvjet = sorted({s for r in seen for s in r.get("syms", []) if s.startswith("nvjet")})
    with open("/proc/self/maps") as fh:  # one libcupti, the one torch preloads, or two copies?
        cupti_libs = sorted({ln.split()[-1] for ln in fh if "libcupti" in ln})
    row = {"mode": mode, "callbacks": len(seen), "nvjet": nvjet, "libcupti": cupti_libs, "first": seen[:3]}
    print(json.dumps(row))


def _activity() -> dict[str, Any]:
    from cupti import cupti

    out: dict[str, Any] = {"records": 0, "kinds": {}}

    def requested() -> tuple[int, int]:
        return 8 << 20, 0

    def completed(activities: list[Any]) -> None:
        for a in activities:
            k = cupti.ActivityKind(a.kind).name
            out["kinds"][k] = out["kinds"].get(k, 0) + 1
            out["records"] += 1

    try:
        cupti.activity_enable(cupti.ActivityKind.MODULE)
        out["enable"] = "ok"
    except Exception as exc:  # the answer to the question: which error CUPTI gives for MODULE
        out["enable"] = f"{type(exc).__name__}: {exc}"
    cupti.activity_register_callbacks(requested, completed)
    import torch

    _matmul(torch, 2048)
    torch.cuda.synchronize()
    cupti.activity_flush_all(1)
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "layout")

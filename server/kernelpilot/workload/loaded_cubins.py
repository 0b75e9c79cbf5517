"""The cubins a step's process loaded at run time, captured through CUPTI's module-loaded callback.

Why: cuBLASLt's nvjet GEMMs and cuDNN's generated kernels are in no fatbin of the libraries a process maps
(none of libcublasLt.so.13's 42,200 fatbin kernels is an nvjet kernel:
tests/fixtures/workload/join/gpu2/nvjet_probe.json); those libraries hand the driver cubins from private
stores at run time. The driver announces every module it loads to CUPTI's resource callback
`CUPTI_CBID_RESOURCE_MODULE_LOADED` with a `CUpti_ModuleResourceData` (module id, cubin size, cubin
pointer; valid only inside the callback, CUPTI API reference "CUpti_ModuleResourceData"), so a child that runs
the step with that callback subscribed copies each cubin out, and `workload.join` reads the files like any
other code object.

Not the activity API's MODULE kind: CUPTI's guide lists `CUPTI_ACTIVITY_KIND_MODULE` among the kinds it
produces no records for ("Activity API", "Limitations"); `CUpti_ActivityModule` exists for tools that fill
it from this callback.

Why a child of its own (`python -m kernelpilot.workload.loaded_cubins`): CUPTI allows one subscriber per
process (`cuptiSubscribe`), and the runner child (workload/runner.py) profiles through Kineto, which holds
CUPTI itself; a failure in this pass loses nothing of the trace.

When: CUPTI's documentation does not say that the callback replays modules loaded before subscribing, so the
child subscribes before it imports torch or calls the factory: everything the step loads comes after.

`cupti-python` (NVIDIA's binding, the optional extra `kernelpilot[cuda]`) is optional: without it the capture
returns a note naming the extra and the join keeps the trace's launch records for those kernels.

This module does not join (`workload.join`) or run the traced capture (`workload.capture`).
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import importlib.util
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ORIGIN = "cupti module"
EXTRA = "kernelpilot[cuda]"
MISSING_NOTE = (
    "cubins loaded at run time (cuBLASLt nvjet, cuDNN generated kernels) not captured: cupti-python is "
    f"not installed (pip install '{EXTRA}'); their facts come from the trace's launch records"
)
# a bound on what one capture writes, not a measured size (tests/workload/gpu_cupti_modules.sh prints that)
MAX_BYTES = 512 * 1024 * 1024
EXIT_NO_CUPTI = 5
EXIT_CUPTI_FAILED = 6
EXIT_USER = 4  # as workload/runner.py: the factory or the step raised


class ModuleResourceData(ctypes.Structure):
    """`CUpti_ModuleResourceData` (cupti_callbacks.h): what `ResourceData.resource_descriptor` points to in a
    MODULE_LOADED callback. The same offsets as cupti-python 13.4's `module_resource_data_dtype` (0, 8, 16;
    24 bytes). Its `ModuleResourceData.p_cubin` reads the cubin as a C string (cut at the first NUL byte), so
    the pointer is read here and the bytes copied with `ctypes.string_at`."""

    _fields_ = [
        ("moduleId", ctypes.c_uint32),
        ("cubinSize", ctypes.c_size_t),
        ("pCubin", ctypes.c_void_p),
    ]


class ResourceData(ctypes.Structure):
    """`CUpti_ResourceData` (cupti_callbacks.h): the callback data of the RESOURCE domain, for a binding that
    passes its address instead of cupti-python's `ResourceData` object."""

    _fields_ = [
        ("context", ctypes.c_void_p),
        ("resourceHandle", ctypes.c_void_p),
        ("resourceDescriptor", ctypes.c_void_p),
    ]


@dataclass
class LoadedImage:
    module_id: int
    data: bytes


def image_from_resource(cbdata: Any) -> LoadedImage | None:
    """Copy the cubin a MODULE_LOADED callback describes (the pointer dies when the callback returns)."""
    if isinstance(cbdata, int) and cbdata:
        desc = ResourceData.from_address(cbdata).resourceDescriptor
    else:
        desc = getattr(cbdata, "resource_descriptor", None)
    if not isinstance(desc, int) or desc == 0:
        return None
    rec = ModuleResourceData.from_address(desc)
    if not rec.pCubin or rec.cubinSize == 0:
        return None
    return LoadedImage(int(rec.moduleId), ctypes.string_at(rec.pCubin, rec.cubinSize))


@dataclass
class ModuleRecorder:
    """Collects the cubins of MODULE_LOADED callbacks, each distinct image once."""

    images: list[LoadedImage] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    callbacks: int = 0
    unreadable: int = 0
    subscriber: Any = None

    def callback(self, _userdata: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
        """The CUPTI callback (runs on the thread that loads the module)."""
        self.callbacks += 1
        img = image_from_resource(cbdata)
        if img is None:
            self.unreadable += 1
            return
        digest = hashlib.sha256(img.data).hexdigest()
        if digest not in self.seen:
            self.seen.add(digest)
            self.images.append(img)

    def start(self, cupti: Any) -> None:
        """Subscribe and enable MODULE_LOADED (cupti-python's `cupti.cupti` module)."""
        self.subscriber = cupti.subscribe(self.callback, None)
        cupti.enable_callback(
            1, self.subscriber, cupti.CallbackDomain.RESOURCE, cupti.CallbackIdResource.MODULE_LOADED
        )

    def stop(self, cupti: Any) -> None:
        if self.subscriber is not None:
            cupti.unsubscribe(self.subscriber)
            self.subscriber = None


def needles(names: Iterable[str]) -> list[bytes]:
    """What a code object's string table holds for a trace kernel: the name itself (extern "C", Triton,
    nvjet) or, for C++, its own identifier as an Itanium symbol spells it (`<length><identifier>`)."""
    from kernelpilot.workload.names import name_keys

    out: dict[bytes, None] = {}
    for n in names:
        if not n:
            continue
        out.setdefault(n.encode(), None)
        own = name_keys(n).own
        if own and own != n:
            out.setdefault(f"{len(own.encode())}{own}".encode(), None)
    return list(out)


def strtab(data: bytes) -> bytes | None:
    """The symbol names of an ELF cubin (None: not a cubin this reader takes)."""
    from kernelpilot.isa.cubin_elf import CubinElf
    from kernelpilot.isa.errors import CodeObjectError

    try:
        elf = CubinElf(data, "cupti module")
        sec = elf.section(".strtab")
        return bytes(elf.data(sec)) if sec is not None else b""
    except CodeObjectError:
        return None


def write_images(
    images: Iterable[LoadedImage], outdir: Path, names: list[str] | None, max_bytes: int = MAX_BYTES
) -> tuple[list[dict[str, Any]], list[str]]:
    """Write the images that hold a trace kernel (all, given no names) as `cupti_module_<id>_<hash>.cubin`
    under `outdir`, at most `max_bytes` in all: (listing, notes). A fatbin image (compressed, its names not
    searchable without unpacking it) is kept as `.fatbin` whatever its names: the join's loader reads it."""
    from kernelpilot.isa.fatbin import FATBIN_MAGIC_BYTES

    outdir.mkdir(parents=True, exist_ok=True)
    want = needles(names) if names else None
    listing: list[dict[str, Any]] = []
    notes: list[str] = []
    total = skipped_big = unknown = 0
    for img in images:
        fatbin = img.data[:4] == FATBIN_MAGIC_BYTES
        table = None if fatbin else strtab(img.data)
        if table is None and not fatbin:
            unknown += 1
            continue
        if want is not None and table is not None and not any(w in table for w in want):
            continue
        if total + len(img.data) > max_bytes:
            skipped_big += 1
            continue
        digest = hashlib.sha256(img.data).hexdigest()
        path = outdir / f"cupti_module_{img.module_id}_{digest[:12]}.{'fatbin' if fatbin else 'cubin'}"
        path.write_bytes(img.data)
        total += len(img.data)
        listing.append({"path": str(path), "module_id": img.module_id, "bytes": len(img.data)})
    if unknown:
        notes.append(f"{unknown} loaded module(s) were neither ELF cubins nor fatbins and were not kept")
    if skipped_big:
        notes.append(f"{skipped_big} loaded module(s) left out: over {max_bytes >> 20} MiB of cubins kept")
    return listing, notes


def cupti_available() -> bool:
    """Whether NVIDIA's binding is importable here (without importing it: that loads libcupti)."""
    try:
        return importlib.util.find_spec("cupti") is not None
    except (ImportError, ValueError):
        return False  # a broken or shadowed package: the same as missing for the capture


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m kernelpilot.workload.loaded_cubins")
    ap.add_argument("spec", help="factory spec, 'file.py:function' or 'module:function'")
    ap.add_argument("--workdir", default=".")
    ap.add_argument("--steps", type=int, default=3, help="steps to run (modules load on first use)")
    ap.add_argument("--out", default=".", help="folder for the cubins and cubins.json")
    ap.add_argument("--kwargs", default="{}", help="JSON object passed to the factory")
    ap.add_argument("--names", default=None, help="JSON file: the trace's kernel names (keep their cubins)")
    ap.add_argument("--max-mb", type=int, default=MAX_BYTES >> 20)
    return ap.parse_args(argv)


def _run_steps(a: argparse.Namespace) -> None:
    """The step `a.steps` times on the GPU, then a synchronize (every module the step uses is loaded)."""
    import torch  # type: ignore[import-not-found,unused-ignore]  # the child exists to run torch

    from kernelpilot.timing.callables import build_closures, load_factory

    step = build_closures(load_factory(a.spec, Path(a.workdir)), 1, json.loads(a.kwargs))[0]
    for _ in range(max(1, a.steps)):
        step()
    torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    """Subscribe, run the step, write the cubins; exit codes EXIT_NO_CUPTI / EXIT_CUPTI_FAILED / EXIT_USER
    tell the parent (`capture_loaded_cubins`) which note to give."""
    a = _args(argv)
    try:
        from cupti import cupti  # type: ignore[import-not-found,unused-ignore]  # optional extra
    except ImportError as exc:
        print(f"kernelpilot-cubins: {MISSING_NOTE} ({exc})", file=sys.stderr)
        return EXIT_NO_CUPTI
    rec = ModuleRecorder()
    try:
        rec.start(cupti)
    except Exception as exc:  # cuptiError, or a libcupti the binding cannot use: the parent notes it
        why = f"{type(exc).__name__}: {exc}"
        print(f"kernelpilot-cubins: CUPTI refused the subscriber: {why}", file=sys.stderr)
        return EXIT_CUPTI_FAILED
    try:
        _run_steps(a)
    except Exception as exc:  # the user's factory or step raised: the traced capture already reported it
        print(f"kernelpilot-cubins: the step raised {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USER
    finally:
        rec.stop(cupti)
    names = json.loads(Path(a.names).read_text()) if a.names else None
    out = Path(a.out)
    listing, notes = write_images(rec.images, out, names, a.max_mb << 20)
    summary = {
        "files": listing,
        "notes": notes,
        "modules_loaded": len(rec.images),
        "callbacks": rec.callbacks,
        "unreadable": rec.unreadable,
    }
    (out / "cubins.json").write_text(json.dumps(summary, indent=1))
    return 0


@dataclass
class CubinCapture:
    """What the capture pass gave: cubin files to join against, and notes for the result."""

    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    modules_loaded: int = 0


def capture_loaded_cubins(
    spec: str,
    workdir: str,
    factory_kwargs: dict[str, Any],
    names: list[str],
    outdir: Path,
    timeout_s: float,
) -> CubinCapture:
    """Run the step in a child subscribed to MODULE_LOADED and keep the cubins that hold `names`; never
    raises for CUPTI's sake: what went wrong becomes a note and the join keeps the launch records."""
    from kernelpilot.foundation.errors import KernelpilotError
    from kernelpilot.host.toolchain import run
    from kernelpilot.workload.capture import runner_env

    if not cupti_available():
        return CubinCapture(notes=[MISSING_NOTE])
    outdir.mkdir(parents=True, exist_ok=True)
    names_file = outdir / "names.json"
    names_file.write_text(json.dumps(sorted(set(names))))
    argv = [sys.executable, "-m", "kernelpilot.workload.loaded_cubins", spec, "--workdir", workdir]
    argv += ["--out", str(outdir), "--kwargs", json.dumps(factory_kwargs), "--names", str(names_file)]
    try:
        res = run(argv, timeout_s=timeout_s, cwd=workdir, env=runner_env(), check=False)
    except KernelpilotError as exc:
        return CubinCapture(notes=[f"cubins loaded at run time not captured: {exc.message}"])
    tail = (res.stderr.strip() or res.stdout.strip())[-600:]
    if res.returncode == EXIT_NO_CUPTI:
        return CubinCapture(notes=[MISSING_NOTE + f" ({tail})"])
    if res.returncode != 0:
        return CubinCapture(
            notes=[f"cubins loaded at run time not captured (child exited {res.returncode}): {tail}"]
        )
    summary = json.loads((outdir / "cubins.json").read_text())
    files = [str(f["path"]) for f in summary.get("files", [])]
    notes = [str(n) for n in summary.get("notes", [])]
    notes.append(
        f"CUPTI module capture: {summary.get('modules_loaded', 0)} module(s) loaded by the step, "
        f"{len(files)} holding a traced kernel kept as code objects"
    )
    return CubinCapture(files, notes, int(summary.get("modules_loaded", 0)))


def add_to_meta(meta: dict[str, Any], cap: CubinCapture) -> None:
    """Put the captured cubins first among the runner's code objects (the join reads files before
    libraries) and record where each came from."""
    meta["code_objects"] = cap.files + [p for p in meta.get("code_objects") or [] if p not in cap.files]
    origins = dict(meta.get("code_object_origins") or {})
    origins.update({f: ORIGIN for f in cap.files})
    meta["code_object_origins"] = origins
    meta["loaded_cubins_notes"] = list(cap.notes)


if __name__ == "__main__":
    sys.exit(main())

"""C++ name demangling: `c++filt` through the toolchain seam when present, else libstdc++'s
`abi::__cxa_demangle` in-process (the same GNU demangler, so the same spelling), else a small pure-Python
Itanium demangler for the common cases (nested names and simple templates; arguments shown as `(...)`).
The mangled name is always reported alongside."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

from kernelpilot.foundation.errors import ToolchainError
from kernelpilot.host import toolchain


def demangle_all(names: list[str]) -> dict[str, str]:
    mangled = sorted({n for n in names if n.startswith("_Z")})
    if not mangled:
        return {}
    exe = toolchain.find_tool("c++filt")
    if exe is not None:
        try:
            res = toolchain.run([str(exe)], stdin_data="\n".join(mangled).encode(), timeout_s=60)
            lines = res.stdout.splitlines()
            if len(lines) == len(mangled):
                return dict(zip(mangled, lines, strict=True))
        except ToolchainError:
            pass  # fall back to the in-process demanglers below
    gnu = _cxa_demangle()
    if gnu is not None:
        return {m: gnu(m) or simple_demangle(m) for m in mangled}
    return {m: simple_demangle(m) for m in mangled}


@functools.cache
def _cxa_demangle() -> functools.partial[str | None] | None:
    """libstdc++'s `__cxa_demangle` through ctypes, or None where the C++ runtime cannot be loaded."""
    path = ctypes.util.find_library("stdc++")
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        fn = lib.__cxa_demangle
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
    except (OSError, AttributeError):
        return None  # no usable C++ runtime here: the caller falls back to the pure-Python subset
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    libc.free.argtypes = [ctypes.c_void_p]
    return functools.partial(_demangle_one, fn, libc.free)


def _demangle_one(fn: Callable[..., int | None], free: Callable[[int], None], name: str) -> str | None:
    status = ctypes.c_int(0)
    ptr = fn(name.encode(), None, None, ctypes.byref(status))
    if not ptr or status.value != 0:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        free(ptr)


def simple_demangle(name: str) -> str:
    """`_ZN2kp5scaleEPffi` -> `kp::scale(...)`; `_Z4axpyIfEvT_PKS0_PS0_i` -> `axpy<...>(...)`; else `name`."""
    if not name.startswith("_Z"):
        return name
    s = name[2:]
    pos = 0
    parts: list[str] = []
    nested = s.startswith("N")
    if nested:
        pos = 1
        while pos < len(s) and s[pos] in "rVKRO":
            pos += 1
    while pos < len(s):
        if s[pos].isdigit():
            end = pos
            while end < len(s) and s[end].isdigit():
                end += 1
            n = int(s[pos:end])
            if end + n > len(s):
                return name
            parts.append(s[end : end + n])
            pos = end + n
            if pos < len(s) and s[pos] == "I":
                parts[-1] += "<...>"
                depth = 0
                while pos < len(s):
                    if s[pos] == "I":
                        depth += 1
                    elif s[pos] == "E":
                        depth -= 1
                        if depth == 0:
                            pos += 1
                            break
                    pos += 1
            if not nested:
                break
        elif nested and s[pos] == "E":
            break
        else:
            return name
    if not parts:
        return name
    return "::".join(parts) + "(...)"

"""C++ name demangling: `c++filt` through the toolchain seam when present, else a small pure-Python
Itanium demangler for the common cases (nested names and simple templates; arguments shown as `(...)`).
The mangled name is always reported alongside."""

from __future__ import annotations

from kernelpilot import toolchain
from kernelpilot.errors import ToolchainError


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
            pass  # fall back to the pure-Python subset below
    return {m: simple_demangle(m) for m in mangled}


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

"""Kernel names across tools: demangling, the join key, and a short readable name.

Why: one kernel is spelled differently by each tool that reports it. The runtime's activity trace (CUPTI
through Kineto, roctracer, rocprofv3) prints a demangled name with its return type (`void at::native::
foo<float>(float*, int)`), some tools print `<unnamed>` where GNU's demangler prints `(anonymous
namespace)`, rocprofv3 drops the parameter list by default, AMD tools may keep the `.kd` suffix of the
kernel-descriptor symbol, and tables cut long names. The code object holds the mangled symbol.
`normalize` maps every spelling of one kernel to one key; `name_keys` also gives the looser keys (no
parameter list, no template arguments, the kernel's own identifier) that `workload.join` falls back to.

This module does not read code objects or traces (`workload.join` does).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from kernelpilot.isa.demangle import demangle_all

ANON = "(anonymous namespace)"
_ANON_SPELLINGS = ("(anonymous namespace)", "<unnamed>", "{anonymous}", "(anonymous)")
_ANON_MARK = "\x01"  # stands for the anonymous namespace while brackets are matched (it holds parentheses)
_CUT_MARKS = ("...", "…")
_RETURN_TYPES = ("void ",)  # what CUPTI prints before a kernel's qualified name (kernels return void)
_OPERATOR = re.compile(r"operator(?:\(\)|\[\]|<<=?|>>=?|<=>|->\*?|[-+*/%^&|~!=<>,]=?|&&|\|\||\+\+|--)")


def demangle(name: str) -> str:
    """The demangled spelling of an Itanium symbol (`_Z...`, also with a `.kd` suffix); other names as given.

    Uses `isa.demangle.demangle_all`: GNU's demangler through `c++filt` (the toolchain seam), else
    libstdc++'s `__cxa_demangle` in-process. Both are the GNU `cp-demangle` code that also prints the
    names CUPTI reports, so the two sides of a join are spelled alike. (PyPI demanglers were not taken:
    `cxxfilt` wraps the same `__cxa_demangle`; `itanium-demangler`, pure Python, prints another spelling
    and has had no release since 2022.)"""
    return demangle_many([name]).get(name, name)


def demangle_many(names: list[str]) -> dict[str, str]:
    """name -> demangled, for every name given (one demangler call for all mangled ones not seen before)."""
    bare = {n: _strip_kd(n.strip()) for n in names}
    todo = sorted({b for b in bare.values() if b.startswith("_Z") and b not in _DEMANGLED})
    if todo:
        _DEMANGLED.update(demangle_all(todo))
    return {n: _DEMANGLED.get(b, b) if b.startswith("_Z") else n for n, b in bare.items()}


_DEMANGLED: dict[str, str] = {}  # mangled -> demangled, for this process


def clear_demangle_cache() -> None:
    """Forget demangled names (a benchmark times the demangler afresh on each run)."""
    _DEMANGLED.clear()


def _strip_kd(name: str) -> str:
    """AMD kernel-descriptor symbols are the kernel's symbol plus `.kd`."""
    return name[:-3] if name.endswith(".kd") else name


class NameKeys(NamedTuple):
    """The join keys of one name, strictest first."""

    full: str  # demangled, return type dropped, anonymous namespace and spacing unified
    no_params: str  # `full` without the trailing parameter list (and `const` of a member)
    base: str  # `no_params` without any template arguments: `at::native::vectorized_elementwise_kernel`
    own: str  # the kernel's own identifier: `vectorized_elementwise_kernel`
    cut: bool  # the name was cut by the tool that printed it (ends in `...`): compare as a prefix


def normalize(name: str) -> str:
    """The join key of a kernel name: demangled, `void ` dropped, `(anonymous namespace)` for every
    spelling of it, `.kd` dropped, spacing canonical (`> >` -> `>>`, no space after commas)."""
    return _unmark(_full(name)[0])


def full_key(name: str, demangled: str | None = None) -> str:
    """`normalize(name)` with the demangled spelling given: the cheap key `workload.join` computes for
    every candidate symbol (string operations in C only; the looser keys cost Python loops)."""
    return _unmark(_full(name, demangled)[0])


def name_keys(name: str, demangled: str | None = None) -> NameKeys:
    """All join keys of `name`; pass `demangled` when it is already known (saves a demangler call)."""
    text, cut = _full(name, demangled)
    no_params = _drop_params(text)
    base = _drop_templates(no_params)
    own = _own(base)
    return NameKeys(_unmark(text), _unmark(no_params), _unmark(base), _unmark(own), cut)


def _full(name: str, demangled: str | None = None) -> tuple[str, bool]:
    """(the full key with the anonymous namespace still marked, whether the name was cut)."""
    text = name.strip()
    cut = text.endswith(_CUT_MARKS)
    for mark in _CUT_MARKS:
        text = text.removesuffix(mark)
    text = _strip_kd(text)
    if text.startswith("_Z"):
        text = demangled if demangled is not None else demangle(text)
    text = _canonical(text)
    for rt in _RETURN_TYPES:
        if text.startswith(rt) and len(text) > len(rt):
            text = text[len(rt) :]
    return text, cut


def _unmark(s: str) -> str:
    return s.replace(_ANON_MARK, ANON)


_KEPT_SPACE = re.compile(r"(?<=[A-Za-z0-9_$])\s+(?=[A-Za-z0-9_$])")
_SPACE = re.compile(r"\s+")


# NVIDIA's demangler (ncu, nsys) spells a lambda `[lambda(float) (instance 1)]`, GNU `{lambda(float)#1}`
_EDG_LAMBDA = re.compile(r"\[lambda(\([^()]*\))\(instance ?(\d+)\)\]")
_BOOL_ARG = re.compile(r"(?<=[<,])(true|false)(?=[,>])")
# integer template arguments: GNU prints `1ul`, NVIDIA's demangler `(unsigned long)1`, and bools `0`/`1`
_INT_CAST = re.compile(
    r"(?<=[<,])\((?:unsigned |signed )?(?:int|long|long long|short|char|__int128)\)(-?\d+)"
)
_INT_SUFFIX = re.compile(r"(?<=[<,])(-?\d+)(?:ull|ul|ll|u|l)(?=[,>])")


def _canonical(text: str) -> str:
    """One spelling of spacing, integer template arguments and the anonymous namespace (as a one-character
    mark until the end): one space kept only between two identifier characters (`unsigned int`, `void
    foo`), none elsewhere; `(int)1` and `1ul` both `1`."""
    for spelling in _ANON_SPELLINGS:
        text = text.replace(spelling, _ANON_MARK)
    text = _SPACE.sub("", _KEPT_SPACE.sub("\x02", text)).replace("\x02", " ")
    if "[lambda" in text:
        text = _EDG_LAMBDA.sub(r"{lambda\1#\2}", text)
    if "<" in text:
        text = _INT_SUFFIX.sub(r"\1", _INT_CAST.sub(r"\1", text))
        text = _BOOL_ARG.sub(lambda m: "1" if m.group(1) == "true" else "0", text)
    return text


def _shielded(text: str) -> str:
    """`text` with operator names (`operator()`, `operator<`) blanked, so bracket matching skips them."""
    return _OPERATOR.sub(lambda m: "operator" + "_" * (len(m.group(0)) - 8), text)


def _drop_params(text: str) -> str:
    """Remove the trailing top-level `(...)` parameter list (and a trailing ` const`)."""
    s = _shielded(text)
    end = len(s)
    for suffix in ("const", "volatile"):  # a member's qualifier: `)const` once spacing is canonical
        if s[:end].endswith(suffix) and s[: end - len(suffix)].rstrip().endswith(")"):
            end = len(s[: end - len(suffix)].rstrip())
    if end == 0 or s[end - 1] != ")":
        return text[:end] if end < len(text) else text
    depth = 0
    for i in range(end - 1, -1, -1):
        c = s[i]
        if c in ")>}]":
            depth += 1
        elif c in "(<{[":
            depth -= 1
            if depth == 0:
                return text[:i] if c == "(" and i > 0 else text
    return text


def _drop_templates(text: str) -> str:
    """Remove every `<...>` group (nesting aware; operator names kept)."""
    s = _shielded(text)
    out: list[str] = []
    depth = 0
    for i, c in enumerate(s):
        if c == "<":
            depth += 1
            continue
        if c == ">" and depth:
            depth -= 1
            continue
        if depth == 0:
            out.append(text[i])
    return "".join(out)


def _own(base: str) -> str:
    """The last `::` component outside braces and parentheses (lambdas, anonymous namespaces kept whole)."""
    depth = 0
    start = 0
    i = 0
    s = _shielded(base)
    while i < len(s):
        c = s[i]
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        elif c == ":" and depth == 0 and s.startswith("::", i):
            start = i + 2
            i += 1
        i += 1
    own = base[start:]
    return own.rsplit(" ", 1)[-1] if " " in own and "operator" not in own else own


def short_name(name: str, width: int = 60) -> str:
    """A readable name within `width` characters: namespaces, return type and parameter list dropped,
    template arguments kept while they fit (deepest dropped first), the kernel's own name always kept
    (cut in the middle only when it alone is longer than `width`)."""
    keys = name_keys(name)
    text = _strip_namespaces(keys.no_params)
    tag = _op_tag(text)
    if len(text.replace(",", ", ")) > width and tag:
        room = width - len(keys.own) - 2
        if room >= 5:
            return f"{keys.own}<{_cut_middle(tag, room)}>"
    while len(text.replace(",", ", ")) > width and "<" in text:
        shorter = _drop_deepest_template(text)
        if shorter == text:
            break
        text = shorter
    if len(text.replace(",", ", ")) > width and "<" in text:
        text = _drop_templates(text) + "<…>"
    return _cut_middle(text.replace(",", ", "), width)


def _cut_middle(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    keep = max(width - 1, 2)
    head = (keep + 1) // 2
    return text[:head] + "…" + text[len(text) - (keep - head) :]


_LAMBDA_OWNER = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*)(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>)?\([^()]*\)(?:const)?::\{lambda"
)
_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:Functor|Ops|Op|Impl|Epilogue|Kernel)$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _op_tag(text: str) -> str | None:
    """What tells one instantiation of a generic kernel from another: the function that owns the lambda
    it runs (`direct_copy_kernel_cuda(...)::{lambda()#3}`), else the most deeply nested functor or op
    type among its template arguments (`BinaryFunctor<..., MulFunctor<float>>` -> `MulFunctor`)."""
    lt = text.find("<")
    if lt < 0:
        return None
    args = text[lt:]
    owner = _LAMBDA_OWNER.search(args)
    if owner:
        return owner.group(1)
    best: tuple[int, str] | None = None
    depth = 0
    shielded = _shielded(args)
    for m in _WORD.finditer(args):
        depth = shielded[: m.start()].count("<") - shielded[: m.start()].count(">")
        if _OP_NAME.match(m.group(0)) and (best is None or depth > best[0]):
            best = (depth, m.group(0))
    return best[1] if best else _first_type_arg(args)


_BUILTIN = frozenset(
    [
        "true",
        "false",
        "int",
        "unsigned",
        "long",
        "short",
        "char",
        "bool",
        "float",
        "double",
        "void",
        "size_t",
        "int64_t",
        "int32_t",
        "uint32_t",
        "array",
        "tuple",
        "pair",
    ]
)


def _first_type_arg(args: str) -> str | None:
    """The first template argument that names a type (`cutlass::Kernel2<cutlass_80_..._align8>`,
    `flash_fwd_kernel<Flash_fwd_kernel_traits<...>, ...>`), without its own arguments."""
    depth = 0
    start = 1
    s = _shielded(args)
    for i, c in enumerate(s):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        if (c == "," and depth == 1) or depth == 0:
            own = _own(_drop_templates(args[start:i]))
            if own and not own[0].isdigit() and own not in _BUILTIN and _WORD.fullmatch(own):
                return own
            start = i + 1
            if depth == 0:
                return None
    return None


_QUALIFIER = re.compile(r"(?:(?:[A-Za-z_$][A-Za-z0-9_$]*|\(anonymous namespace\))::)+")


def _strip_namespaces(text: str) -> str:
    """`at::native::foo<at::native::Bar<float>>` -> `foo<Bar<float>>` (every qualifier prefix dropped)."""
    return _QUALIFIER.sub("", text)


def _drop_deepest_template(text: str) -> str:
    """Replace the contents of the most deeply nested `<...>` groups with `…`."""
    s = _shielded(text)
    depth = 0
    best = 0
    for c in s:
        if c == "<":
            depth += 1
            best = max(best, depth)
        elif c == ">" and depth:
            depth -= 1
    if best == 0:
        return text
    out: list[str] = []
    depth = 0
    for i, c in enumerate(s):
        if c == "<":
            depth += 1
            if depth == best:
                out.append("<…")
                continue
        elif c == ">" and depth:
            depth -= 1
            if depth == best - 1:
                out.append(">")
                continue
        if depth < best:
            out.append(text[i])
    return "".join(out)


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")


def _differences(tokens: list[list[str]]) -> list[str]:
    """Per token list: its first words/numbers that some other list lacks, joined."""
    common = set.intersection(*(set(t) for t in tokens))
    return [", ".join(list(dict.fromkeys(x for x in t if x not in common))[:4]) for t in tokens]


def unique_short_names(names: list[str], width: int = 60) -> list[str]:
    """`short_name` of each name, made unique within the list: names that share one get the template
    arguments that tell them apart appended (`elementwise_kernel<MulFunctor> [4, BFloat16]`): the words and
    numbers of each full name that some other name of the group lacks, in order (namespaces only when
    nothing else tells them apart); `#k` only where the names differ in nothing but order."""
    shorts = [short_name(n, width) for n in names]
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(shorts):
        groups.setdefault(s, []).append(i)
    for short, idx in groups.items():
        if len(idx) < 2:
            continue
        texts = [name_keys(names[i]).no_params for i in idx]
        tags = _differences([_TOKEN.findall(_strip_namespaces(x)) for x in texts])
        if len(set(tags)) < len(tags) or not all(tags):  # told apart by their namespaces only
            tags = _differences([_TOKEN.findall(x) for x in texts])
        seen: set[str] = set()
        for k, (i, tag) in enumerate(zip(idx, tags, strict=True)):
            if not tag or tag in seen:
                tag = f"{tag} #{k + 1}" if tag else f"#{k + 1}"
            seen.add(tag)
            suffix = f" [{tag}]"
            shorts[i] = _cut_middle(short, max(width + 20 - len(suffix), 20)) + suffix
    return shorts

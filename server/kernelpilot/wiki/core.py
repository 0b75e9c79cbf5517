"""Parsing and loading the gpu-wiki (bundled + user wikis), and looking up cited specs.

Owns: the wiki line grammar (below), the README index (GPU id -> file -> aliases, metric
vocabulary), merging user wikis over the bundled one (overrides reported, conflicts between user
wikis reported and refused), and name matching for GPUs and metrics. It never invents a number: a
missing GPU or metric raises `UnknownSpecError` whose message starts with `UNKNOWN (gpu-wiki not found)`.

Line grammar (one Markdown list item per spec; anything else is prose and ignored):
    - <metric_key>: <value> <unit> | source: <document title>, <table/page>, <URL>
    - <metric_key>: "<text>" text | source: ...
    - measured_<...>: <value> <unit> | measured: device=..., driver=..., date=..., method=...,
      runs=..., median=...
A list item that starts like a spec (`- lower_snake_key: `) but breaks this grammar (unit outside the
vocabulary, no source, text without quotes, ...) is a *malformed* line: reported with file:line and skipped.

Precedence: user wikis (`--wiki` in the order given, then KERNELPILOT_WIKI_PATH entries) over the bundled
wiki. A user value replacing a bundled one is an *override* (reported). Two user wikis giving different
values for the same GPU metric are a *conflict* (reported; looking that metric up raises WikiConflictError).
A user wiki without a README index maps each `*.md` file to a GPU by its file stem (id or alias), else by
a `(gpu_id: <id>)` marker or the text of its `# ` title; a file matching no known GPU adds a new GPU whose
id is its stem.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernelpilot.foundation.errors import InputFileError
from kernelpilot.wiki.errors import AmbiguousNameError, WikiConflictError
from kernelpilot.wiki.models import UNITS, UNKNOWN_TEXT, CitedValue, GpuInfo, UnknownSpecError, WikiIssue

ENV_VAR = "KERNELPILOT_WIKI_PATH"
_UNITS = frozenset(UNITS)

_CANDIDATE_RE = re.compile(r"^\s*[-*]\s+`?([a-z][a-z0-9_]*)`?\s*:\s")
_SPEC_RE = re.compile(
    r"^- (?P<key>[a-z][a-z0-9_]*): "
    r'(?P<value>"[^"]*"|[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?) '
    r"(?P<unit>\S+) \| (?P<tag>source|measured): (?P<src>\S.*?)\s*$"
)
_TABLE_SEP_RE = re.compile(r"^\|?\s*:?-{2,}")
_GPU_ID_MARK_RE = re.compile(r"\(gpu_id:\s*([A-Za-z0-9._-]+)\s*\)")
_VENDOR_WORDS = re.compile(
    r"\b(nvidia|amd|instinct|radeon|geforce|rtx|tesla|tensor core gpu|gpu|accelerator)\b"
)


def norm(name: str) -> str:
    """Normalized name for matching: lower case, letters and digits only ('H100 SXM5' -> 'h100sxm5')."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _norm_variants(name: str) -> set[str]:
    low = name.lower()
    out = {norm(low)}
    stripped = norm(_VENDOR_WORDS.sub(" ", low))
    if stripped:
        out.add(stripped)
    out.discard("")
    return out


@dataclass
class ParsedLine:
    key: str
    value: float | str
    value_text: str
    unit: str
    measured: bool
    source: str


def parse_spec_line(text: str) -> ParsedLine | str | None:
    """Parse one wiki line: a ParsedLine, None for prose, or a string saying why the line is malformed."""
    if not _CANDIDATE_RE.match(text):
        return None
    stripped = text.rstrip("\n").rstrip("\r")
    m = _SPEC_RE.match(stripped)
    if m is None:
        if " | source:" not in stripped and " | measured:" not in stripped:
            return "no '| source: <title>, <table/page>, <URL>' (or '| measured: ...') provenance"
        return "not '- <metric_key>: <value> <unit> | source: ...' (value must be a number or a quoted text)"
    unit = m["unit"]
    raw = m["value"]
    if unit not in _UNITS:
        return f"unit {unit!r} is not in the unit vocabulary ({', '.join(UNITS)})"
    is_text = raw.startswith('"')
    if is_text and unit != "text":
        return f"quoted value with unit {unit!r}: text values take unit 'text'"
    if not is_text and unit == "text":
        return "unit 'text' needs a double-quoted value"
    measured = m["tag"] == "measured"
    if measured != m["key"].startswith("measured_"):
        if measured:
            return "'| measured:' provenance needs a measured_<...> key (datasheet keys take '| source:')"
        return "measured_<...> keys need '| measured: device=..., ...' provenance"
    src = m["src"]
    if len(src) < 3:
        return "empty provenance"
    value: float | str = raw[1:-1] if is_text else float(raw)
    return ParsedLine(m["key"], value, raw, unit, measured, src)


def _table_rows(lines: list[str]) -> list[list[list[str]]]:
    """Every Markdown table in the file as a list of rows of cells (header first, separator dropped)."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for ln in lines:
        s = ln.strip()
        if s.startswith("|"):
            if _TABLE_SEP_RE.match(s.replace(" ", "")) or set(s) <= set("|-: "):
                continue
            cells = [c.strip().strip("`") for c in s.strip("|").split("|")]
            current.append(cells)
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


@dataclass
class IndexEntry:
    gpu_id: str
    file: str
    vendor: str
    aliases: list[str]


@dataclass
class RootIndex:
    entries: list[IndexEntry] = field(default_factory=list)
    vocabulary: dict[str, tuple[str, str]] = field(default_factory=dict)


def parse_index(path: Path, rel: str, issues: list[WikiIssue]) -> RootIndex:
    """Parse README.md: the `| gpu_id | file | vendor | aliases |` and `| key | unit | meaning |` tables."""
    idx = RootIndex()
    lines = path.read_text(encoding="utf-8").splitlines()
    for table in _table_rows(lines):
        header = [h.lower() for h in table[0]]
        if "gpu_id" in header and "file" in header:
            gi, fi = header.index("gpu_id"), header.index("file")
            vi = header.index("vendor") if "vendor" in header else None
            ai = header.index("aliases") if "aliases" in header else None
            for row in table[1:]:
                if len(row) <= max(gi, fi):
                    issues.append(WikiIssue(kind="index", path=rel, message=f"short index row: {row}"))
                    continue
                aliases = (
                    [a.strip() for a in row[ai].split(",") if a.strip()]
                    if ai is not None and ai < len(row)
                    else []
                )
                vendor = row[vi] if vi is not None and vi < len(row) else ""
                idx.entries.append(IndexEntry(row[gi], row[fi], vendor, aliases))
        elif header[:2] == ["key", "unit"]:
            for row in table[1:]:
                if len(row) >= 2:
                    idx.vocabulary[row[0]] = (row[1], row[2] if len(row) > 2 else "")
    return idx


@dataclass
class GpuFile:
    """One parsed GPU file."""

    title: str
    specs: dict[str, CitedValue]


def parse_gpu_file(path: Path, rel: str, gpu_id: str, issues: list[WikiIssue]) -> GpuFile:
    """Parse one GPU file; malformed and duplicate lines are reported and skipped (first definition kept)."""
    title = ""
    specs: dict[str, CitedValue] = {}
    in_fence = False
    in_measured = False
    with path.open(encoding="utf-8") as fh:
        for lineno, text in enumerate(fh, start=1):
            if text.startswith("```"):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            if text.startswith("#"):
                if not title and text.startswith("# "):
                    title = text[2:].strip()
                elif text.startswith("##"):
                    in_measured = text.lstrip("#").strip().lower().startswith("measured")
                continue
            if text[:1] not in "-* \t":
                continue
            parsed = parse_spec_line(text)
            if parsed is None:
                continue
            if isinstance(parsed, str):
                issues.append(
                    WikiIssue(kind="malformed", path=rel, line=lineno, message=parsed + " (skipped)")
                )
                continue
            if parsed.measured != in_measured:
                where = "outside" if parsed.measured else "inside"
                issues.append(
                    WikiIssue(
                        kind="malformed",
                        path=rel,
                        line=lineno,
                        message=f"{'measured' if parsed.measured else 'datasheet'} line {where} the "
                        "'## Measured' section (skipped)",
                    )
                )
                continue
            if parsed.key in specs:
                first = specs[parsed.key]
                issues.append(
                    WikiIssue(
                        kind="duplicate",
                        path=rel,
                        line=lineno,
                        message=f"{parsed.key} already defined at L{first.line}; this line is skipped",
                    )
                )
                continue
            specs[parsed.key] = CitedValue.model_construct(
                metric=parsed.key,
                value=parsed.value,
                unit=parsed.unit,
                path=rel,
                line=lineno,
                source_text=parsed.source,
                measured=parsed.measured,
                value_text=parsed.value_text,
                gpu_id=gpu_id,
            )
    return GpuFile(title, specs)


@dataclass
class WikiRoot:
    name: str
    path: Path
    bundled: bool


@dataclass
class GpuEntry:
    gpu_id: str
    name: str
    vendor: str
    file: str
    root: str
    aliases: list[str]
    specs: dict[str, CitedValue] = field(default_factory=dict)
    origin: dict[str, bool] = field(default_factory=dict)  # metric -> from bundled root
    conflicts: dict[str, list[CitedValue]] = field(default_factory=dict)
    overrides: dict[str, tuple[CitedValue, CitedValue]] = field(default_factory=dict)  # metric -> (new, old)


_METRIC_SYNONYMS = {
    "hbm": "memory",
    "dram": "memory",
    "mem": "memory",
    "bw": "bandwidth",
    "sms": "sm",
    "cus": "cu",
    "l2": "l2",
    "lds": "lds",
    "bfloat16": "bf16",
    "half": "fp16",
    "float16": "fp16",
    "float32": "fp32",
    "float64": "fp64",
    "tflops": "tflops",
    "tdp": "tdp",
    "power": "tdp",
}


def _metric_tokens(name: str) -> list[str]:
    return [_METRIC_SYNONYMS.get(t, t) for t in re.split(r"[^a-z0-9]+", name.lower()) if t]


class Wiki:
    """The merged gpu-wiki: GPUs by id, their cited specs, aliases, vocabulary and load issues."""

    def __init__(self) -> None:
        self.roots: list[WikiRoot] = []
        self.gpus: dict[str, GpuEntry] = {}
        self.vocabulary: dict[str, tuple[str, str]] = {}
        self.issues: list[WikiIssue] = []
        self._names: dict[str, set[str]] = {}
        self._vocab_reported: set[str] = set()

    # ------------------------------------------------------------------ names
    def _register_names(self, gpu_id: str, names: list[str]) -> None:
        for n in names:
            for v in _norm_variants(n):
                self._names.setdefault(v, set()).add(gpu_id)

    def _match_gpu(self, name: str, *, exact_only: bool = False) -> list[str]:
        """GPU ids matching a name exactly (normalized), else (unless exact_only) by prefix."""
        keys = _norm_variants(name)
        exact: set[str] = set()
        for k in keys:
            exact |= self._names.get(k, set())
        if exact or exact_only:
            return sorted(exact)
        pref: set[str] = set()
        for k in keys:
            if len(k) < 2:
                continue
            for known, ids in self._names.items():
                if known.startswith(k):
                    pref |= ids
        return sorted(pref)

    def match_gpu_name(self, name: str, *, exact_only: bool = False) -> list[str]:
        """GPU ids whose id/alias/title equals `name` (normalized), else (unless exact_only) by prefix."""
        return self._match_gpu(name, exact_only=exact_only)

    def arch_gpus(self, name: str) -> list[str]:
        """GPU ids whose cited `isa_target` is `name` (`sm_89`, `gfx942`), in id order; [] for other names."""
        key = norm(name)
        return sorted(
            g
            for g, e in self.gpus.items()
            if (t := e.specs.get("isa_target")) is not None
            and isinstance(t.value, str)
            and norm(t.value) == key
        )

    def name_note(self, name: str, gpu_id: str) -> str | None:
        """Why `name` resolved to `gpu_id` when it could mean other parts too: an architecture id shared by
        several GPUs (`gfx942`), or a family name other parts start with (`H100`: SXM5, PCIe, NVL). None when
        the name means one GPU (issue 42: `H100` had silently meant the SXM5 part)."""
        title = self.gpus[gpu_id].name
        shared = [g for g in self.arch_gpus(name) if g != gpu_id]
        if shared:
            return (
                f"{name!r} is an architecture: picked {gpu_id} ({title}), the GPU that owns the alias; "
                f"{', '.join(shared)} are {name} too: give one of them for its own specs"
            )
        keys = {k for k in _norm_variants(name) if len(k) >= 2}
        if keys & (_norm_variants(gpu_id) | _norm_variants(title)):
            return None  # the GPU's own id or title (`L40`, `MI250`), not a family alias
        others = sorted(
            {g for known, ids in self._names.items() if any(known.startswith(k) for k in keys) for g in ids}
            - {gpu_id}
        )
        if not others:
            return None
        return (
            f"{name!r} picked {gpu_id} ({title}); other parts of that name: "
            + ", ".join(f"{g} ({self.gpus[g].name})" for g in others)
            + ": give the part's name or id if yours is one of them"
        )

    def resolve_gpu(self, name: str) -> str:
        """Wiki GPU id for a name, id or alias; raises UnknownSpecError or AmbiguousNameError (an architecture
        id no single GPU owns, such as `sm_89`, is ambiguous between the GPUs of that architecture)."""
        if not name or not name.strip():
            raise UnknownSpecError(f"{UNKNOWN_TEXT}: empty GPU name", "give a GPU name, e.g. H100 or MI300X")
        found = self._match_gpu(name)
        if not found and (arch := self.arch_gpus(name)):
            cands = [f"{g} ({self.gpus[g].name})" for g in arch]
            raise AmbiguousNameError(
                f"{name!r} is an architecture, not one GPU: {len(arch)} wiki GPUs are {name}: "
                + ", ".join(cands),
                "give the GPU's name or wiki id (one of the candidates)",
                candidates=arch,
            )
        if not found:
            raise UnknownSpecError(
                f"{UNKNOWN_TEXT}: no GPU matching {name!r} in wikis {self.root_names()}",
                f"list GPUs with `kernelpilot gpus`; known: {', '.join(sorted(self.gpus))}",
            )
        if len(found) > 1:
            cands = [f"{g} ({self.gpus[g].name})" for g in found]
            raise AmbiguousNameError(
                f"GPU name {name!r} is ambiguous: {', '.join(cands)}",
                "give the wiki id (one of the candidates)",
                candidates=found,
            )
        return found[0]

    def resolve_metric(self, gpu_id: str, metric: str) -> str:
        """Metric key for a key or close name ('bf16 dense' -> bf16_dense_tflops); raises like lookup."""
        entry = self.gpus[gpu_id]
        keys = set(entry.specs) | set(entry.conflicts)
        if metric in keys:
            return metric
        q = _metric_tokens(metric)
        if not q:
            raise UnknownSpecError(f"{UNKNOWN_TEXT}: empty metric name for {gpu_id}", "give a metric key")
        wants_measured = "measured" in q
        hits: list[str] = []
        for k in sorted(keys) if metric not in self.vocabulary else []:  # a known key never fuzzy-matches
            kt = _metric_tokens(k)
            if all(any(t == x or x.startswith(t) for x in kt) for t in q):
                hits.append(k)
        if not wants_measured and any(not h.startswith("measured_") for h in hits):
            hits = [h for h in hits if not h.startswith("measured_")]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise AmbiguousNameError(
                f"metric {metric!r} for {gpu_id} is ambiguous: {', '.join(hits)}",
                "give the full metric key",
                candidates=hits,
            )
        raise UnknownSpecError(
            f"{UNKNOWN_TEXT}: metric {metric!r} for GPU {gpu_id} ({entry.file})",
            f"known metrics: {', '.join(sorted(keys))}; add a cited line to a user wiki (--wiki DIR) if the "
            "vendor publishes it",
        )

    # ------------------------------------------------------------------ lookup
    def lookup(self, gpu: str, metric: str) -> CitedValue:
        """The cited value of `metric` for `gpu` (name/alias/id); UNKNOWN, ambiguity and conflicts raise."""
        gpu_id = self.resolve_gpu(gpu)
        key = self.resolve_metric(gpu_id, metric)
        entry = self.gpus[gpu_id]
        if key in entry.conflicts:
            cands = [c.citation() for c in entry.conflicts[key]]
            raise WikiConflictError(
                f"user wikis disagree on {key} for {gpu_id}: {' vs '.join(cands)}",
                "remove or correct one of the conflicting lines (or pass only one of those wikis)",
                candidates=cands,
            )
        return entry.specs[key]

    def get(self, gpu_id: str, metric: str) -> CitedValue | None:
        """Exact key lookup on a resolved id; None when absent (callers decide how to say UNKNOWN)."""
        entry = self.gpus.get(gpu_id)
        if entry is None or metric in entry.conflicts:
            return None
        return entry.specs.get(metric)

    def specs(self, gpu_id: str) -> list[CitedValue]:
        entry = self.gpus[self.resolve_gpu(gpu_id)]
        return sorted(entry.specs.values(), key=lambda c: (c.path, c.line))

    def override_notes(self, gpu_id: str) -> list[str]:
        entry = self.gpus[gpu_id]
        return [
            f"{new.citation()} overrides bundled {old.citation()}" for new, old in entry.overrides.values()
        ]

    def root_names(self) -> list[str]:
        return [r.name for r in self.roots]

    def gpu_infos(self) -> list[GpuInfo]:
        out = []
        for g in sorted(self.gpus.values(), key=lambda e: (e.vendor.lower(), e.gpu_id)):
            measured = sum(1 for c in g.specs.values() if c.measured)
            out.append(
                GpuInfo(
                    gpu_id=g.gpu_id,
                    name=g.name,
                    vendor=g.vendor,
                    file=g.file,
                    aliases=g.aliases,
                    spec_count=len(g.specs) - measured,
                    measured_count=measured,
                )
            )
        return out

    def resolve_cited_files(self, cited: str) -> list[Path]:
        """Files on disk for a cited `<root folder>/<file>`: one per loaded root of that name, user first.

        Strictly inside the root: an absolute path after the prefix (`gpu-wiki-index//etc/passwd` would
        otherwise be `/etc/passwd`), a `..`, a backslash or a link that leads out gives nothing, so the
        audit never reads a file that is not a wiki's (`escapes_roots` says why)."""
        first, _, rest = cited.partition("/")
        if not rest or self.escapes_roots(cited):
            return []
        out = []
        for root in reversed(self.roots):
            if root.name == first:
                candidate = root.path / rest
                try:
                    if candidate.is_file():
                        out.append(candidate)
                except OSError:  # a name over NAME_MAX (ENAMETOOLONG): no such wiki file (dangling)
                    continue
        return out

    def escapes_roots(self, cited: str) -> bool:
        """The cited `<root folder>/<file>` leaves its wiki root: absolute after the prefix, `..`, a
        backslash, or a path whose links resolve outside every loaded root of that name."""
        first, _, rest = cited.partition("/")
        if not rest:
            return False  # no file part: not in any wiki (dangling), but it leaves nothing
        parts = rest.split("/")
        if rest.startswith("/") or "\\" in rest or ".." in parts or "" in parts:
            return True
        for root in self.roots:
            if root.name != first:
                continue
            base = root.path.resolve()
            try:
                (root.path / rest).resolve().relative_to(base)
            except ValueError:
                return True
            except (OSError, RuntimeError):  # a link loop (RuntimeError on 3.11) or over-long name
                return True
        return False

    # ------------------------------------------------------------------ loading
    def _add_root(self, root: WikiRoot) -> None:
        issues: list[WikiIssue] = []
        readme = root.path / "README.md"
        rel_readme = f"{root.name}/README.md"
        idx = parse_index(readme, rel_readme, issues) if readme.is_file() else RootIndex()
        for key, val in idx.vocabulary.items():
            self.vocabulary.setdefault(key, val)
        files: list[tuple[str | None, Path, str, str, list[str]]] = []  # (gpu_id, path, rel, vendor, aliases)
        indexed = set()
        for e in idx.entries:
            p = root.path / e.file
            rel = f"{root.name}/{e.file}"
            if not p.is_file():
                issues.append(
                    WikiIssue(kind="index", path=rel_readme, message=f"{e.gpu_id}: file {e.file} missing")
                )
                continue
            indexed.add(p.resolve())
            files.append((e.gpu_id, p, rel, e.vendor, e.aliases))
        if not idx.entries:
            for p in sorted(root.path.rglob("*.md")):
                if p.name.lower() == "readme.md" or any(part.startswith(".") for part in p.parts):
                    continue
                rel = f"{root.name}/{p.relative_to(root.path).as_posix()}"
                files.append((None, p, rel, "", []))
        elif not root.bundled:
            for p in sorted(root.path.rglob("*.md")):
                if p.name.lower() != "readme.md" and p.resolve() not in indexed:
                    rel = f"{root.name}/{p.relative_to(root.path).as_posix()}"
                    issues.append(
                        WikiIssue(kind="unindexed", path=rel, message="not in README index; ignored")
                    )
        for gpu_id, p, rel, vendor, aliases in files:
            parsed = parse_gpu_file(p, rel, gpu_id or "", issues)
            if gpu_id is None:
                gpu_id = self._identify_unindexed(p, parsed.title)
            elif not root.bundled and gpu_id not in self.gpus:
                same = self._match_gpu(gpu_id, exact_only=True)
                gpu_id = same[0] if len(same) == 1 else gpu_id
            self._merge(root, gpu_id, parsed, rel, vendor, aliases, issues)
        self._check_vocabulary(issues)
        self.issues.extend(issues)
        self.roots.append(root)

    def _identify_unindexed(self, path: Path, title: str) -> str:
        mark = _GPU_ID_MARK_RE.search(title)
        for name in ([mark.group(1)] if mark else []) + [path.stem, _GPU_ID_MARK_RE.sub("", title).strip()]:
            if not name:
                continue
            found = self._match_gpu(name, exact_only=True)
            if len(found) == 1:
                return found[0]
        return mark.group(1) if mark else path.stem

    def _merge(
        self,
        root: WikiRoot,
        gpu_id: str,
        parsed: GpuFile,
        rel: str,
        vendor: str,
        aliases: list[str],
        issues: list[WikiIssue],
    ) -> None:
        entry = self.gpus.get(gpu_id)
        if entry is None:
            entry = GpuEntry(gpu_id, parsed.title or gpu_id, vendor, rel, root.name, list(aliases))
            self.gpus[gpu_id] = entry
            self._register_names(gpu_id, [gpu_id, *aliases] + ([parsed.title] if parsed.title else []))
        else:
            new_aliases = [a for a in aliases if a not in entry.aliases]
            entry.aliases.extend(new_aliases)
            self._register_names(gpu_id, new_aliases)
        for key, cv in parsed.specs.items():
            if cv.gpu_id != gpu_id:
                cv = cv.model_copy(update={"gpu_id": gpu_id})
            old = entry.specs.get(key)
            if old is None and key not in entry.conflicts:
                entry.specs[key] = cv
                entry.origin[key] = root.bundled
                continue
            if key in entry.conflicts:
                entry.conflicts[key].append(cv)
                continue
            assert old is not None
            if entry.origin.get(key, False) and not root.bundled:
                entry.specs[key] = cv
                entry.origin[key] = False
                entry.overrides[key] = (cv, old)
                issues.append(
                    WikiIssue(
                        kind="override",
                        path=rel,
                        line=cv.line,
                        message=f"{gpu_id} {key}: {cv.written_value()} {cv.unit} overrides bundled "
                        f"{old.written_value()} {old.unit} <- {old.path}:L{old.line}",
                    )
                )
            elif old.value == cv.value and old.unit == cv.unit:
                issues.append(
                    WikiIssue(
                        kind="duplicate",
                        path=rel,
                        line=cv.line,
                        message=f"{gpu_id} {key} repeats {old.path}:L{old.line} with the same value "
                        "(first kept)",
                    )
                )
            else:
                entry.conflicts[key] = [old, cv]
                del entry.specs[key]
                issues.append(
                    WikiIssue(
                        kind="conflict",
                        path=rel,
                        line=cv.line,
                        message=f"{gpu_id} {key}: {cv.written_value()} {cv.unit} conflicts with "
                        f"{old.written_value()} {old.unit} <- {old.path}:L{old.line}; neither is used",
                    )
                )

    def _check_vocabulary(self, issues: list[WikiIssue]) -> None:
        """With a vocabulary loaded, a spec whose unit differs from the key's unit is skipped as malformed."""
        if not self.vocabulary:
            return
        for entry in self.gpus.values():
            for key in list(entry.specs):
                cv = entry.specs[key]
                voc = self.vocabulary.get(key)
                if voc is None:
                    if key not in self._vocab_reported:
                        self._vocab_reported.add(key)
                        issues.append(
                            WikiIssue(
                                kind="unknown_metric",
                                path=cv.path,
                                line=cv.line,
                                message=f"{key} is not in the README metric vocabulary (used as written)",
                            )
                        )
                    continue
                if voc[0] != cv.unit:
                    issues.append(
                        WikiIssue(
                            kind="malformed",
                            path=cv.path,
                            line=cv.line,
                            message=f"unit {cv.unit!r} does not match the vocabulary unit {voc[0]!r} of "
                            f"{key} "
                            "(skipped)",
                        )
                    )
                    del entry.specs[key]


def user_wiki_dirs(extra_dirs: list[Path] | None = None) -> list[Path]:
    """User wiki folders: `extra_dirs` (e.g. --wiki, in order), then KERNELPILOT_WIKI_PATH entries."""
    dirs = list(extra_dirs or [])
    env = os.environ.get(ENV_VAR, "")
    dirs.extend(Path(p) for p in env.split(os.pathsep) if p.strip())
    return dirs


def load_wiki(extra_dirs: list[Path] | None = None, *, include_bundled: bool = True) -> Wiki:
    """Load the bundled gpu-wiki-index plus user wikis (extend/override; see the module docstring)."""
    from kernelpilot.foundation.paths import bundled_dir

    wiki = Wiki()
    if include_bundled:
        bundled = bundled_dir("gpu-wiki-index")
        wiki._add_root(WikiRoot(bundled.name, bundled, True))
    seen: set[Path] = {r.path.resolve() for r in wiki.roots}
    for d in user_wiki_dirs(extra_dirs):
        p = Path(d).expanduser()
        if not p.is_dir():
            raise InputFileError(
                f"wiki folder {str(d)!r} does not exist or is not a folder",
                f"give an existing folder with --wiki or in {ENV_VAR}",
            )
        if p.resolve() in seen:
            continue
        seen.add(p.resolve())
        wiki._add_root(WikiRoot(p.resolve().name, p.resolve(), False))
    return wiki

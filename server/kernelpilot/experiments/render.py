"""Compact text an agent reads at a glance: record tables, one record, a lineage tree, failures."""

from __future__ import annotations

from collections.abc import Sequence

from kernelpilot.experiments.record import ExperimentRecord


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "~"


def score_text(score: float | None) -> str:
    return "-" if score is None else f"{score:.3g}x"


def table(
    records: Sequence[ExperimentRecord], numbered: bool = True, extra: Sequence[str] | None = None
) -> str:
    """One line per record: rank, id, score, status, operator, dtype, arch, summary."""
    if not records:
        return "(no records)"
    cols = ["#", "id", "score", "status", "operator", "dtype", "arch", "summary"]
    rows = []
    for i, r in enumerate(records, 1):
        status = r.status.value + ("!" if r.is_buggy else "")
        rows.append(
            [
                str(i),
                r.id,
                score_text(r.score),
                status,
                _clip(r.operator, 18),
                _clip(r.dtype, 12),
                _clip(r.arch or r.gpu, 10),
                r.summary,
            ]
        )
    if extra is not None:
        cols.insert(2, "sim")
        for row, e in zip(rows, extra, strict=True):
            row.insert(2, e)
    if not numbered:
        cols.pop(0)
        rows = [row[1:] for row in rows]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
    widths[-1] = 0
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines)


def detail(r: ExperimentRecord) -> str:
    """Every field worth reading, one per line, empty ones left out."""
    lines = [f"{r.id}  {r.status.value}{' (buggy)' if r.is_buggy else ''}  score {score_text(r.score)}"]
    lines.append(f"  summary: {r.summary}")
    lines.append(f"  parent: {r.parent_id or '-'}   created: {r.created.isoformat()}")
    if r.updated:
        lines.append(f"  updated: {r.updated.isoformat()}")
    target = " ".join(x for x in (r.operator, r.dtype, r.gpu, r.arch) if x)
    lines.append(f"  target: {target}")
    if r.shapes:
        lines.append("  shapes: " + ", ".join(f"{k}={v}" for k, v in r.shapes.items()))
    env = r.environment
    env_parts = [
        f"driver {env.driver}" if env.driver else "",
        f"toolkit {env.toolkit}" if env.toolkit else "",
    ]
    env_parts += [f"{k} {v}" for k, v in {**env.libraries, **env.other}.items()]
    if any(env_parts):
        lines.append("  environment: " + ", ".join(p for p in env_parts if p))
    if r.base_commit or r.diff_hash:
        lines.append(f"  commit: {r.base_commit or '-'}  diff: {r.diff_hash or '-'}")
    for name in ("approach", "result", "why", "insight"):
        value = getattr(r.description, name)
        if value:
            lines.append(f"  {name}: {value}")
    if r.error_message:
        lines.append(f"  error: {_clip(r.error_message, 300)}")
    for v in r.profiling.verdicts:
        lvl = f"/{v.memory_level}" if v.memory_level else ""
        lines.append(f"  verdict: {v.kernel}: {v.verdict}{lvl} (confidence {v.confidence:.2f})")
    if r.profiling.key_metrics:
        lines.append("  metrics: " + ", ".join(f"{k}={v}" for k, v in r.profiling.key_metrics.items()))
    if r.tags:
        lines.append("  tags: " + ", ".join(r.tags))
    links = r.links
    link_parts = [f"{n}={v}" for n, v in (("workspace", links.workspace), ("ledger", links.ledger),
                                         ("result", links.result_json)) if v]  # fmt: skip
    if link_parts or links.files:
        lines.append("  links: " + ", ".join(link_parts + links.files))
    return "\n".join(lines)


def _node(r: ExperimentRecord, mark: str = "") -> str:
    return f"{mark}{r.id} [{r.status.value} {score_text(r.score)}] {r.summary}"


def lineage_tree(
    record: ExperimentRecord, ancestors: Sequence[ExperimentRecord], descendants: Sequence[ExperimentRecord]
) -> str:
    """Root first down to the record (marked `*`), then every descendant as an indented tree."""
    lines = [f"lineage of {record.id}: {len(ancestors)} ancestor(s), {len(descendants)} descendant(s)"]
    chain = [*reversed(ancestors), record]
    if record.parent_id and (not ancestors or ancestors[-1].parent_id):
        missing = ancestors[-1].parent_id if ancestors else record.parent_id
        lines.append(f"({missing} - not in this store)")
    depth = 0
    for depth, r in enumerate(chain):
        prefix = "" if depth == 0 else "   " * (depth - 1) + "└─ "
        lines.append(prefix + _node(r, "* " if r.id == record.id else ""))
    children: dict[str, list[ExperimentRecord]] = {}
    for d in descendants:
        children.setdefault(d.parent_id or "", []).append(d)

    def walk(parent: str, indent: str, seen: set[str]) -> None:
        kids = children.get(parent, [])
        for i, k in enumerate(kids):
            if k.id in seen:
                continue
            seen.add(k.id)
            last = i == len(kids) - 1
            lines.append(indent + ("└─ " if last else "├─ ") + _node(k))
            walk(k.id, indent + ("   " if last else "│  "), seen)

    walk(record.id, "   " * depth, {record.id})
    return "\n".join(lines)


def failures(records: Sequence[ExperimentRecord]) -> str:
    """What not to try again, each with why."""
    if not records:
        return "no recorded failures match"
    lines = [f"{len(records)} attempt(s) that did not pay off - do not repeat without a new reason:"]
    for r in records:
        target = " ".join(x for x in (r.operator, r.dtype, r.arch or r.gpu) if x)
        lines.append(
            f"- [{r.status.value}{'!' if r.is_buggy else ''} {score_text(r.score)}] {r.what()}"
            f"  ({target}, {r.id})"
        )
        lines.append(f"    why: {_clip(r.why_text(), 200)}")
    return "\n".join(lines)

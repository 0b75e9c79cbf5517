"""Cells are submitted longest first (sweep.order): by the roofline floor of their shape when every shape has
one, else by the shape's size; a paired candidate counts twice; ties go baseline first, then ledger order."""

from __future__ import annotations

from pathlib import Path

from kernelpilot.sweep import order, spec
from kernelpilot.sweep.records import Roofline


def _loaded(sweep_dir: Path, gpu: str | None) -> spec.LoadedSweep:
    text = (sweep_dir / "sweep.toml").read_text()
    if gpu:
        text = text.replace('mode = "warm"', f'mode = "warm"\ngpu = "{gpu}"')
    (sweep_dir / "o.toml").write_text(text)
    return spec.load(str(sweep_dir / "o.toml"))


def test_without_roofline_the_biggest_shapes_go_first_paired_candidates_before_their_baseline(
    sweep_dir: Path,
):
    loaded = _loaded(sweep_dir, None)
    todo = [(v, s) for v in loaded.spec.variants for s in loaded.shapes]
    ordered, how = order.longest_first(todo, loaded.spec, Roofline(loaded.spec))
    assert how.startswith("longest first by shape size")
    sizes = [s.fields["rows"] * s.fields["cols"] * (2 if v == "einsum" else 1) for v, s in ordered]
    assert sizes == sorted(sizes, reverse=True) and sorted(ordered, key=str) == sorted(todo, key=str)
    # 1024 x 4096 paired first; its baseline ties with 1024 x 2048 paired: the baseline goes first
    assert [(v, s.fields["rows"], s.fields["cols"]) for v, s in ordered[:3]] == [
        ("einsum", 1024, 4096), ("numpy", 1024, 4096), ("einsum", 1024, 2048),
    ]  # fmt: skip
    # the smallest cell is last: the tail of the cells phase is the shortest cell
    assert (ordered[-1][0], ordered[-1][1].fields) == ("numpy", {"rows": 64, "cols": 128})


def test_with_a_gpu_the_roofline_floor_ranks_the_cells(sweep_dir: Path):
    loaded = _loaded(sweep_dir, "h100-sxm5")
    roof = Roofline(loaded.spec)
    todo = [(v, s) for v in loaded.spec.variants for s in loaded.shapes]
    ordered, how = order.longest_first(todo, loaded.spec, roof)
    assert how.startswith("longest first by roofline floor")
    floors = []
    for v, s in ordered:
        pt = roof.point(s)
        assert pt is not None
        floors.append(pt.floor_us * (2 if v == "einsum" else 1))
    assert floors == sorted(floors, reverse=True)

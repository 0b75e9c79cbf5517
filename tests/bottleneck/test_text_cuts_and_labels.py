"""Compact views cut text at word boundaries, and each "% of measured ceiling" says what it divides
(issue 42), on the recorded H100 transpose (tests/fixtures/profile/rootcause, PROVENANCE.md)."""

from __future__ import annotations

import re
from pathlib import Path

from kernelpilot.bottleneck.classify import classify_bottleneck
from kernelpilot.bottleneck.models import ClassifyRequest
from kernelpilot.foundation.text import ELLIPSIS, clip
from kernelpilot.roofline.core import analyze
from kernelpilot.roofline.models import RooflineRequest
from kernelpilot.suggest.core import suggest_experiments
from kernelpilot.suggest.models import SuggestRequest

RC = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "rootcause"
KERNEL = "transpose_smem_nopad"


def test_clip_cuts_at_a_word_boundary() -> None:
    text = "under the 16 B of a 128-bit access; each of the 256 threads reads 4 B"
    assert clip(text, 200) == text
    got = clip(text, 54)
    assert got == "under the 16 B of a 128-bit access; each of the 256" + ELLIPSIS and len(got) <= 54
    assert clip("abc defgh", 8) == "abc" + ELLIPSIS  # never "abc def…" (a cut word)
    assert clip("abc defgh ij", 10) == "abc defgh" + ELLIPSIS  # a space right at the cut ends a word
    assert clip("x" * 50, 10) == "x" * 9 + ELLIPSIS  # one long word: cut inside rather than dropped


def _verdict_json() -> str:
    fit = (RC / "isa" / f"fit_{KERNEL}.json").read_text()
    req = ClassifyRequest(profile_path=str(RC / "full" / f"{KERNEL}_raw.csv"), isa_facts_json=fit)
    return classify_bottleneck(req).model_dump_json()


def _no_cut_words(view: str, sources: list[str]) -> None:
    """Every line ending in the ellipsis is a prefix of some full text that continues at a word boundary."""
    for line in view.splitlines():
        if not line.endswith(ELLIPSIS):
            continue
        body = line.rstrip(ELLIPSIS).split(": ", 1)[-1].strip()
        tail = body[-25:]
        hits = [s for s in sources if tail in s]
        assert hits, f"cut line matches no source: {line!r}"
        for s in hits:
            nxt = s[s.index(tail) + len(tail) :][:1]
            assert nxt in ("", " ", ",", ";", ":", ")", "."), f"cut inside a word: {line!r} (next {nxt!r})"


def test_bottleneck_and_suggest_views_cut_no_word() -> None:
    import json

    raw = _verdict_json()
    from kernelpilot.bottleneck.models import ClassifyResult

    res = ClassifyResult.model_validate_json(raw)
    sg = suggest_experiments(SuggestRequest(bottleneck=raw))
    doc = json.loads(raw)
    sources = [c[k] for v in doc["verdicts"] for c in v["causes"] for k in ("quantity", "gain_formula")]
    sources += [s.title for s in sg.suggestions] + [e for s in sg.suggestions for e in s.evidence]
    sources += ["; ".join(sg.skipped)]
    text = res.render_text()
    assert text.count(ELLIPSIS) >= 1  # the narrow-loads line is long enough to be cut
    _no_cut_words(text, sources)
    _no_cut_words(sg.render_text(), sources)


def test_each_ceiling_percentage_says_what_it_divides() -> None:
    """The roofline's stop verdict divides the op's counted bytes by the eval time; the bottleneck's divides
    the profile's DRAM bytes by the profiled duration: the two figures differ and now say why."""
    # a transpose as elementwise: one 4-byte read and one write per element of the 4096^2 matrix
    req = RooflineRequest(
        gpu="h100-sxm5", op="elementwise", numel=4096 * 4096, dtype="fp32", measured_time_us=100
    )
    roof = analyze(req)
    assert roof.stop.basis == "the op's counted work / --measured-time-us"
    assert re.search(
        r"achieved [\d.]+ TB/s \(the op's counted work / --measured-time-us\) = [\d.]+% of the",
        roof.stop.text,
    )
    import json

    v = json.loads(_verdict_json())["verdicts"][0]
    assert v["stop"]["basis"] == "DRAM bytes/time"
    sg = suggest_experiments(SuggestRequest(bottleneck=_verdict_json()))
    assert "% of measured ceiling (≥90%; DRAM bytes/time)" in sg.render_text()
    narrow = next(c for c in v["causes"] if c["rule"] == "narrow_global_loads")
    assert "of the measured ceiling (the stop verdict's figure)" in narrow["gain_formula"]

"""Shared fixtures of the wiki/roofline tests: the fixture wikis and the bundled one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelpilot.wiki import Wiki, load_wiki

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "wiki"
SMALL = FIX / "gpu-wiki-index"
WIKIDATA_COPY = FIX / "wikidata-copy" / "gpu-wiki-index"
MEASURED_H100 = FIX / "measured-h100.md"


def bundled_wiki() -> Wiki:
    """The wiki the package ships; its H100 and MI300X files must be there (a missing one fails, never
    skips: the acceptance tests read them)."""
    from kernelpilot.foundation.paths import bundled_dir

    root = bundled_dir("gpu-wiki-index")
    for gpu in ("nvidia/h100-sxm5.md", "amd/mi300x.md"):
        assert (root / gpu).is_file(), f"the bundled gpu-wiki-index lacks {gpu}"
    return load_wiki()


@pytest.fixture(params=["small", "wikidata-copy", "bundled"])
def any_wiki(request: pytest.FixtureRequest) -> Wiki:
    """Acceptance wikis: small fixture, copy of the wikidata files, bundled wiki."""
    if request.param == "bundled":
        return bundled_wiki()
    root = SMALL if request.param == "small" else WIKIDATA_COPY
    return load_wiki([root], include_bundled=False)


@pytest.fixture
def small_wiki() -> Wiki:
    return load_wiki([SMALL], include_bundled=False)


@pytest.fixture
def wiki_copy(tmp_path: Path) -> Path:
    """A writable copy of the small fixture wiki (folder name gpu-wiki-index)."""
    dst = tmp_path / "gpu-wiki-index"
    shutil.copytree(SMALL, dst)
    return dst


@pytest.fixture
def measured_dir(tmp_path: Path) -> Path:
    """A user wiki holding the H100 measured lines recorded on the device."""
    d = tmp_path / "measured"
    d.mkdir()
    shutil.copy(MEASURED_H100, d / "h100-sxm5.md")
    return d

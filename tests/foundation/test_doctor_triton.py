"""`doctor` and tool discovery find the ptxas/nvdisasm/cuobjdump a Triton wheel ships under
`triton/backends/nvidia/bin` (issue 32: SASS counted offline on a CPU host), so `isa` commands use them:
a Triton package laid out in a temporary folder whose bin holds the real nvdisasm (the dev venv's PyPI
nvidia-cuda-nvdisasm), with PATH, the known folders and the pip wheels' folders hidden."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.host import toolchain
from kernelpilot.host.doctor import DoctorRequest, run_doctor

FX = Path(__file__).resolve().parent.parent / "fixtures" / "isa" / "nvidia"


# the dev extra's nvidia-cuda-nvdisasm: skipped with its name locally, a failure in CI
pytestmark = pytest.mark.needs_tool("nvdisasm")


@pytest.fixture
def triton_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    real = toolchain.find_tool("nvdisasm")
    assert real is not None  # the needs_tool mark skipped (or, in CI, failed) the test otherwise
    site = tmp_path / "site"
    bin_dir = site / "triton" / "backends" / "nvidia" / "bin"
    bin_dir.mkdir(parents=True)
    (site / "triton" / "__init__.py").write_text("raise ImportError('discovery must not import triton')\n")
    (bin_dir / "nvdisasm").symlink_to(real.resolve())
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("KERNELPILOT_NVDISASM", raising=False)
    monkeypatch.setattr(toolchain, "_python_scripts_dirs", lambda: [])
    for name in ("nvdisasm", "ptxas", "cuobjdump"):
        monkeypatch.setitem(toolchain.KNOWN_TOOLS, name, (("--version",), ()))
    return bin_dir


def test_discovery_finds_tritons_bundled_nvdisasm(triton_only: Path) -> None:
    assert toolchain.triton_bin_dirs() == [str(triton_only)]
    assert toolchain.find_tool("nvdisasm") == triton_only / "nvdisasm"
    assert toolchain.find_tool("ptxas") is None  # not in this layout: nothing invented


def test_doctor_names_triton_as_the_source(triton_only: Path) -> None:
    res = run_doctor(DoctorRequest(probe_gpus=False))
    (nvdisasm,) = [t for t in res.tools if t.name == "nvdisasm"]
    assert nvdisasm.found and nvdisasm.bundled_with == "triton"
    assert nvdisasm.version and nvdisasm.path == str(triton_only / "nvdisasm")
    assert "shipped with triton" in res.render_text()
    (offline,) = [c for c in res.capabilities if c.capability.startswith("offline SASS counts")]
    assert not offline.available and offline.reason == "missing: ptxas"


def test_isa_mix_runs_with_tritons_nvdisasm(triton_only: Path) -> None:
    from kernelpilot.isa.api import IsaFileRequest
    from kernelpilot.isa.core import isa_mix

    kernels = isa_mix(IsaFileRequest(file=str(FX / "kernels.sm_90.cubin"))).kernels
    assert kernels and all(k.instructions > 0 for k in kernels)


def test_no_triton_no_dirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(toolchain.importlib.util, "find_spec", lambda name: None)
    assert toolchain.triton_bin_dirs() == []

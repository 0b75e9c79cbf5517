"""Request/result models of `ceilings measure` (cheap to import; measuring is in `ceilings.measure`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from kernelpilot.foundation.models import Request, Result
from kernelpilot.wiki.models import WIKI_FIELD_DESCRIPTION

DEFAULT_DTYPES = ["bf16", "fp16", "fp32", "tf32", "fp8"]


class CeilingsRequest(Request):
    out: str | None = Field(
        default=None,
        description=(
            "Write the measured wiki lines to this Markdown file (a one-GPU user wiki file; name it "
            "<gpu_id>.md in a folder and pass that folder with --wiki to roofline)"
        ),
    )
    mkdir: bool = Field(default=False, description="Create the missing folders of --out (else refused).")
    gpu: str | None = Field(
        default=None,
        description="wiki GPU id/alias to file the lines under (default: matched from the device name)",
    )
    device: int = Field(default=0, description="CUDA device index")
    copy_mib: int = Field(default=2048, description="buffer size (MiB) for the copy and read bandwidth tests")
    matmul_sizes: list[int] = Field(
        default_factory=lambda: [4096, 8192, 16384],
        description="square matmul sizes M=N=K to try; the ceiling is the best median over sizes",
    )
    dtypes: list[str] = Field(
        default_factory=lambda: list(DEFAULT_DTYPES),
        description=(
            "matmul dtypes: bf16, fp16, fp32 (TF32 off), tf32 (fp32 with TF32 on), "
            "fp8 (e4m3 via torch._scaled_mm)"
        ),
    )
    runs: int = Field(default=50, description="timed runs per measurement (median reported)")
    warmup: int = Field(default=10, description="untimed warm-up runs per measurement")
    wiki: list[str] = Field(default_factory=list, description=WIKI_FIELD_DESCRIPTION)


class MeasuredRecord(BaseModel):
    metric: str
    value: float
    unit: str
    median: float
    spread_pct: float = Field(description="(p90 - p10) / median of the per-run throughputs, in %")
    runs: int
    best_shape: str = ""
    method: str
    line: str = Field(description="the wiki line (`## Measured` format of `kernelpilot.wiki.core`)")


class CeilingsResult(Result):
    device_name: str
    gpu_id: str
    gpu_match: str = Field(description="how gpu_id was chosen")
    driver: str
    torch_version: str
    cuda_version: str
    date: str
    command: str
    records: list[MeasuredRecord]
    skipped: list[str] = Field(default_factory=list)
    lines: list[str]
    out_path: str | None = None

    def render_text(self) -> str:
        out = [
            f"device: {self.device_name} (gpu_id {self.gpu_id}: {self.gpu_match}); driver {self.driver}; "
            f"torch {self.torch_version} (CUDA {self.cuda_version}); {self.date}",
            "## Measured",
            *self.lines,
        ]
        out.extend(f"skipped: {s}" for s in self.skipped)
        if self.out_path:
            out.append(f"written to {self.out_path}")
        return "\n".join(out)

"""One spelling for output-file options (issue 35): `--html`, `--svg`, `--out`, `--manifest` take a file in
every command; `sweep report --html` alone still works (the default ./<sweep id>.html)."""

from __future__ import annotations

import typing

from kernelpilot.adapters.cli import build_parser, command_values
from kernelpilot.capabilities import all_capabilities

OUTPUT_OPTIONS = ("html", "svg", "out", "manifest")
# a format switch, not an output file: `report` writes its Markdown and HTML inside the workspace's reports/
SWITCHES = {"render_report.html"}


def test_every_output_option_takes_a_file() -> None:
    seen = []
    for cap in all_capabilities():
        for name in OUTPUT_OPTIONS:
            field = cap.request.model_fields.get(name)
            if field is None:
                continue
            seen.append(f"{cap.tool}.{name}")
            if f"{cap.tool}.{name}" in SWITCHES:
                continue
            assert str in typing.get_args(field.annotation) or field.annotation is str, (cap.tool, name)
    assert {"sweep_report.html", "sweep_run.html", "workload_read.html", "roofline.svg"} <= set(seen)


def test_sweep_report_html_takes_a_file_and_a_bare_switch_still_works() -> None:
    def values(*argv: str) -> dict[str, object]:
        return command_values(build_parser(list(argv)).parse_args(list(argv)))

    assert values("sweep", "report", "sweep-x", "--html", "d.html")["html"] == "d.html"
    assert values("sweep", "report", "sweep-x", "--html")["html"] == ""
    assert "html" not in values("sweep", "report", "sweep-x")

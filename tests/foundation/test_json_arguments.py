"""JSON arguments: every `*_json` field and every JSON-typed option takes inline JSON or a JSON file
path, read in one place (`kernelpilot.foundation.validation`), so no command is left taking only one form
(issue 27)."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

from kernelpilot.capabilities import all_capabilities
from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError
from kernelpilot.foundation.validation import load_json_argument

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def _json_fields() -> list[tuple[str, str, typing.Any]]:
    out = []
    for cap in all_capabilities():
        for name, f in cap.request.model_fields.items():
            if name.endswith("_json"):
                out.append((cap.tool, name, f))
    return out


def test_every_json_field_reads_through_the_shared_layer(tmp_path: Path) -> None:
    from pydantic import TypeAdapter

    fields = _json_fields()
    assert {("classify_bottleneck", "profile_json"), ("classify_bottleneck", "isa_facts_json")} <= {
        (t, n) for t, n, _ in fields
    }
    path = tmp_path / "arg.json"
    path.write_text('{"from": "a file"}')
    for tool, name, f in fields:
        adapter: TypeAdapter[typing.Any] = TypeAdapter(f.annotation)
        assert adapter.validate_python(str(path)) == '{"from": "a file"}', f"{tool}.{name} takes no file path"
        assert adapter.validate_python('{"inline": 1}') == '{"inline": 1}', f"{tool}.{name}"


def test_load_json_argument_inline_file_and_errors(tmp_path: Path) -> None:
    doc = {"registers": 32, "kernel": "k"}
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(doc))
    assert load_json_argument(json.dumps(doc), "x") == doc
    assert load_json_argument(str(path), "x") == doc
    assert load_json_argument(doc, "x") == doc  # an MCP client that sent an object
    with pytest.raises(InputFileError, match="neither inline JSON nor an existing file"):
        load_json_argument(str(tmp_path / "missing.json"), "--profile-json")
    with pytest.raises(InvalidArgumentError, match="--isa-facts-json is not valid JSON"):
        load_json_argument("{not json", "--isa-facts-json")
    path.write_text("{broken")
    with pytest.raises(InvalidArgumentError, match="x is not valid JSON"):
        load_json_argument(str(path), "x")


def test_bottleneck_profile_json_takes_a_path_like_inline(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    parsed = run_cli("--json", "profile", "parse", str(FIX / "profile" / "ncu" / "softmax_rows_raw.csv"))
    assert parsed.code == 0, parsed.err
    saved = tmp_path / "profile.json"
    saved.write_text(parsed.out)
    from_file = run_cli("--json", "bottleneck", "--profile-json", str(saved))
    inline = run_cli("--json", "bottleneck", "--profile-json", parsed.out)
    assert from_file.code == inline.code == 0, from_file.err + inline.err
    assert json.loads(from_file.out) == json.loads(inline.out)
    assert json.loads(from_file.out)["verdicts"][0]["kernel"] == "softmax_rows"
    missing = run_cli("bottleneck", "--profile-json", str(tmp_path / "nope.json"))
    assert missing.code == 2 and "neither inline JSON nor an existing file" in missing.err


def test_json_typed_options_take_a_file_too(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A dict-typed option (memory update --patch) through the CLI's JSON decoding: a path works."""
    patch = tmp_path / "patch.json"
    patch.write_text('{"notes": "from a file"}')
    kernel = tmp_path / "k.cu"
    kernel.write_text("// k\n")
    r = run_cli(
        "workspace", "init", "w", "--kernel", str(kernel), "--platform", "H100", "--framework", "cuda",
        "--allow-tbd", "--root", str(tmp_path),
    )  # fmt: skip
    assert r.code == 0, r.err
    r = run_cli("memory", "create", "--workspace", str(tmp_path / "w"), "--change", "baseline")
    assert r.code == 0, r.err
    r = run_cli(
        "--json",
        "memory",
        "update",
        "--workspace",
        str(tmp_path / "w"),
        "--version",
        "0",
        "--patch",
        str(patch),
    )
    assert r.code == 0, r.err
    assert json.loads(r.out)["record"]["notes"] == "from a file"

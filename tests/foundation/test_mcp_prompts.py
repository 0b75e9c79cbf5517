"""MCP prompts: listed and fetched with arguments through the official client, and unable to drift from the
slash commands and skills they are read from."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from kernelpilot.adapters.mcp_server import build_server
from kernelpilot.adapters.prompts import PROMPTS, argument_hint, read_markdown

REPO = Path(__file__).resolve().parents[2]
COMMANDS = REPO / "skills" / ".commands"


def test_prompts_are_listed_with_typed_arguments_and_fetched_with_them():
    async def main() -> None:
        async with Client(build_server()) as client:
            listed = {p.name: p for p in (await client.list_prompts()).prompts}
            assert {"optimize-kernel", "kernel-roofline", "kernel-fit"} <= set(listed)
            assert len(listed) >= 3
            roof = listed["kernel-roofline"]
            args = {a.name: a for a in roof.arguments or []}
            assert args["gpu"].required and args["op"].required and not args["measured_time"].required
            assert all(a.description for a in args.values())

            got = await client.get_prompt(
                "kernel-roofline", {"gpu": "H100", "op": "gemm M=4096 N=4096 K=4096 bf16"}
            )
            text = got.messages[0].content.text
            assert got.messages[0].role == "user"
            assert "Compute a cited roofline for: gpu: H100; op: gemm M=4096 N=4096 K=4096 bf16" in text
            assert "$ARGUMENTS" not in text and "mcp: roofline" in text

            fit = await client.get_prompt("kernel-fit", {"code_object": "a.cubin", "kernel": "gemm.*"})
            assert "code_object: a.cubin; --kernel gemm.*" in fit.messages[0].content.text

            opt = await client.get_prompt("optimize-kernel", {"kernel": "gemm.cu", "gpu": "MI300X"})
            assert "kernel: gemm.cu; gpu: MI300X" in opt.messages[0].content.text

            triage = await client.get_prompt("kernel-triage", {"kernel": "softmax.cu"})
            body = triage.messages[0].content.text
            assert "**kernel-triage**" in body and "kernel: softmax.cu" in body
            assert read_markdown(REPO / "skills" / "kernel-triage" / "SKILL.md")[1].strip() in body

            with pytest.raises(MCPError, match="gpu"):
                await client.get_prompt("kernel-roofline", {"op": "gemm"})
            with pytest.raises(MCPError, match=r"no argument\(s\) bogus"):
                await client.get_prompt("kernel-roofline", {"gpu": "H100", "op": "x", "bogus": "1"})

    anyio.run(main)


def test_prompts_and_slash_commands_cannot_drift():
    """Every slash command is a prompt; its argument-hint is the one rendered from the declared arguments,
    and the prompt's description is the command's (both read from the same file)."""
    commands = sorted(p.stem for p in COMMANDS.glob("*.md"))
    declared = sorted(s.command for s in PROMPTS if s.command)
    assert commands == declared, "a slash command without a prompt (or the reverse): declare it in prompts.py"
    for spec in PROMPTS:
        meta, body = read_markdown(spec.source())
        assert meta["description"], spec.name
        if spec.command:
            assert meta["argument-hint"] == argument_hint(spec), (
                f"{spec.name}: argument-hint is stale; run `python -m kernelpilot.adapters.reference --write`"
            )
            assert "$ARGUMENTS" in body
        assert len({a.name for a in spec.arguments}) == len(spec.arguments)
        assert any(a.required for a in spec.arguments), spec.name

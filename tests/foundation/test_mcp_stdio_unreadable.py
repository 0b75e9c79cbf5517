"""Issue 41 over the stdio transport: a request line the SDK cannot read (a lone UTF-16 surrogate escape,
broken JSON) is answered with a JSON-RPC error naming its id, instead of being dropped while the client waits
for ever; the server keeps serving. A subprocess server (a transport test), fed raw lines: the official
Python client cannot even send a lone surrogate."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from pydantic import ValidationError
from tests.waiting import wait_until

from kernelpilot.adapters.mcp_sdk import unreadable_reply


def _reader(proc: subprocess.Popen[bytes], lines: list[dict[str, object]]) -> None:
    assert proc.stdout is not None
    for raw in proc.stdout:
        lines.append(json.loads(raw))


def test_unreadable_requests_get_an_error_and_the_server_goes_on() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelpilot.adapters.mcp_server", "--toolsets", "experiments"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    got: list[dict[str, object]] = []
    threading.Thread(target=_reader, args=(proc, got), daemon=True).start()

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line.encode() + b"\n")
        proc.stdin.flush()

    def answer(rid: int) -> dict[str, object]:
        wait_until(lambda: any(m.get("id") == rid for m in got), f"the answer to request {rid}")
        return next(m for m in got if m.get("id") == rid)

    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        }
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        answer(1)
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        call = (
            '{"jsonrpc": "2.0", "id": %d, "method": "tools/call", '
            '"params": {"name": "exp_get", "arguments": %s}}'
        )
        send(call % (2, '{"id": "a\\ud800"}'))  # a lone surrogate escape: the SDK's parser refuses it
        send(call % (3, '{"id": "r", "db": "/tmp/\\udcff.db"}'))
        send(
            '{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": '
        )  # cut short: no id to read
        send(call % (5, '{"id": "a\\u0000b"}'))  # valid JSON: a typed tool error naming the argument
        for rid in (2, 3):
            err = answer(rid)["error"]
            assert isinstance(err, dict) and err["code"] == -32700
            assert f"could not read request {rid}" in str(err["message"]) and "fix:" in str(err["message"])
        result = answer(5)["result"]
        assert isinstance(result, dict) and result["isError"] is True
        assert "id holds a NUL or a lone UTF-16 surrogate" in json.dumps(result)
        send(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}))
        assert "tools" in answer(6)["result"]  # type: ignore[operator]
        assert not any(m.get("id") == 4 for m in got)  # a line with no readable id has nothing to answer
    finally:
        proc.kill()
        proc.wait()


def test_unreadable_reply_answers_only_requests_it_can_name() -> None:
    from mcp import types

    def failure(line: str) -> ValidationError:
        try:
            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValidationError as exc:
            return exc
        raise AssertionError("the SDK read the line")

    reply = unreadable_reply(
        failure('{"jsonrpc": "2.0", "id": "q7", "method": "x", "params": {"a": "\\udc00"}}')
    )
    assert reply is not None and reply.message.id == "q7"
    assert unreadable_reply(failure('{"jsonrpc": "2.0", "method": "n", "params": {"a": "\\udc00"}}')) is None
    assert unreadable_reply(failure("not json")) is None
    assert unreadable_reply(RuntimeError("x")) is None

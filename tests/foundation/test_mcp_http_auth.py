"""Streamable HTTP exposure rules, through real server processes and the official client's HTTP transport.

Off loopback a bearer token is required (the server refuses to start without one, and answers 401 to any
request without the right one); on loopback the SDK's Host/Origin checks stay on. Servers bound to 0.0.0.0
are only ever reached through 127.0.0.1 here.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from tests.waiting import wait_until

from kernelpilot.adapters.http_auth import check_exposure, is_loopback
from kernelpilot.foundation.errors import InvalidArgumentError

TOKEN = "kp-test-token-0123456789abcdef"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(token: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KERNELPILOT_MCP_TOKEN"}
    if token:
        env["KERNELPILOT_MCP_TOKEN"] = token
    return env


def _argv(host: str, port: int) -> list[str]:
    server = [sys.executable, "-m", "kernelpilot.adapters.mcp_server", "--transport", "streamable-http"]
    return [*server, "--host", host, "--port", str(port)]


@contextmanager
def _server(host: str, token: str | None) -> Iterator[int]:
    port = _free_port()
    proc = subprocess.Popen(
        _argv(host, port), env=_env(token), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:

        def listening() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"server exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, "the HTTP server to listen")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _post(port: int, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "POST",
            "/mcp",
            body=json.dumps(INIT),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        return conn.getresponse().status
    finally:
        conn.close()


def _list_and_call(port: int, token: str | None) -> set[str]:
    async def main() -> set[str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers) as http:
            transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
            async with Client(transport) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                res = await client.call_tool("doctor", {"probe_gpus": False})
                assert not res.is_error
                return names

    return anyio.run(main)


def test_non_loopback_without_token_refuses_to_start():
    port = _free_port()
    res = subprocess.run(_argv("0.0.0.0", port), env=_env(None), capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "refusing to serve MCP on 0.0.0.0" in res.stderr and "KERNELPILOT_MCP_TOKEN" in res.stderr
    assert "Traceback" not in res.stderr
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0, "it must not have listened"


def test_token_rules_off_loopback():
    with _server("0.0.0.0", TOKEN) as port:
        assert _post(port, {}) == 401
        assert _post(port, {"Authorization": "Bearer wrong-token-0123456789abcdef"}) == 401
        assert _post(port, {"Authorization": TOKEN}) == 401  # the scheme is part of the credential
        assert _post(port, {"Authorization": f"Bearer {TOKEN}"}) == 200
        with pytest.raises(ExceptionGroup) as err:  # the official client refused: no tools without the token
            _list_and_call(port, None)
        assert err.group_contains(MCPError)
        assert "doctor" in _list_and_call(port, TOKEN)


def test_loopback_keeps_host_and_origin_checks_and_takes_an_optional_token():
    with _server("127.0.0.1", None) as port:
        assert _post(port, {"Host": "evil.example:80"}) == 421
        assert _post(port, {"Origin": "http://evil.example"}) == 403
        assert _post(port, {}) == 200
        assert "doctor" in _list_and_call(port, None)
    with _server("127.0.0.1", TOKEN) as port:
        assert _post(port, {}) == 401
        assert _post(port, {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example:80"}) == 421
        assert "doctor" in _list_and_call(port, TOKEN)


def test_exposure_rules_without_a_server():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("example.org")
    check_exposure("127.0.0.1", None)
    check_exposure("0.0.0.0", TOKEN)
    with pytest.raises(InvalidArgumentError, match="non-loopback"):
        check_exposure("::", None)
    with pytest.raises(InvalidArgumentError, match="shorter than 16"):
        check_exposure("0.0.0.0", "short")

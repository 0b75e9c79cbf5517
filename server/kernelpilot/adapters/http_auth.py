"""Serving MCP over streamable HTTP: a bearer token off loopback, Host/Origin checks on loopback.

The tools run programs (`time` in command mode, `eval`, `profile run`), so a server reachable from other
machines must not answer without a credential: on a non-loopback address `serve` refuses to start without
a token, and every request without `Authorization: Bearer <token>` gets 401 (compared in constant time).
On loopback the SDK's DNS-rebinding protection stays on (a foreign Host gets 421, a foreign Origin 403)
and a token, when given, is required as well.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from kernelpilot.foundation.errors import InvalidArgumentError


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback IP literals (127.0.0.0/8, ::1); false for 0.0.0.0, :: and names."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: 401 for every HTTP request whose bearer token is missing or wrong."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan events carry no headers
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope.get("headers", []) if k.lower() == b"authorization"), b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        body = b'{"error": "unauthorized", "error_description": "missing or wrong bearer token"}'
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="kernelpilot-mcp"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def check_exposure(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a token, and a token too short to resist guessing."""
    if token is not None and len(token) < 16:
        raise InvalidArgumentError(
            "the MCP auth token is shorter than 16 characters",
            "use a long random token, e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
        )
    if not is_loopback(host) and not token:
        raise InvalidArgumentError(
            f"refusing to serve MCP on {host}, a non-loopback address, without an auth token: its tools run "
            "programs on this machine",
            "set KERNELPILOT_MCP_TOKEN (or pass --auth-token) to a long random secret and give clients "
            "the header `Authorization: Bearer <token>`; or bind --host 127.0.0.1",
        )


def app(server: Any, *, host: str, token: str | None) -> ASGIApp:
    """The streamable-HTTP ASGI app of an `MCPServer`, behind the bearer check when a token is given.

    The SDK turns on Host/Origin validation itself for a loopback `host`; other hosts rely on the token.
    """
    check_exposure(host, token)
    inner: ASGIApp = server.streamable_http_app(host=host)
    return BearerAuth(inner, token) if token else inner


def serve(server: Any, *, host: str, port: int, token: str | None) -> None:
    """Run the app with uvicorn (the server the SDK itself uses for this transport)."""
    import uvicorn

    asgi = app(server, host=host, token=token)
    uvicorn.run(asgi, host=host, port=port, log_level="warning")

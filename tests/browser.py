"""Headless Chromium for the HTML report tests: a screenshot of a page and every console line it logged."""

from __future__ import annotations

import re
from pathlib import Path

from kernelpilot.host.toolchain import find_tool, run

# With --enable-logging=stderr Chromium prints every console message (log, warn, error, uncaught
# exceptions) as `...:INFO:CONSOLE...] "<text>", source: <url> (<line>)`. Our pages have no scripts,
# so ANY console line is a failure.
CONSOLE_RE = re.compile(r":CONSOLE[:(\]]|Uncaught")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
)


def screenshot(page: Path, tmp: Path, size: str = "1280,1600") -> tuple[list[str], Path]:
    """Open `page` in headless Chromium; (console lines, PNG screenshot path)."""
    exe = find_tool("chromium")
    assert exe is not None
    shot = tmp / f"{page.stem}.png"
    res = run(
        [
            str(exe),
            *CHROMIUM_FLAGS,
            f"--window-size={size}",
            f"--user-data-dir={tmp / ('profile-' + page.stem)}",
            f"--screenshot={shot}",
            page.resolve().as_uri(),
        ],
        timeout_s=90,
        check=False,
    )
    console = [ln for ln in (res.stderr + res.stdout).splitlines() if CONSOLE_RE.search(ln)]
    return console, shot

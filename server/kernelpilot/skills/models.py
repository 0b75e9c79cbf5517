"""Request/result models of `skills install` (cheap to import; the work is in `skills.install`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from kernelpilot.foundation.models import Request, Result


class SkillsInstallRequest(Request):
    uninstall: bool = Field(
        default=False,
        description="Remove what an earlier `skills install` made (its links, then the folders it created)",
    )
    config_dir: str | None = Field(
        default=None,
        description="Claude Code config folder (default: $CLAUDE_CONFIG_DIR, else ~/.claude)",
    )


class SkippedPath(BaseModel):
    path: str
    reason: str


class SkillsInstallResult(Result):
    action: str = Field(description="'install' or 'uninstall'")
    config_dir: str
    source: str = Field(description="the installed package's skills folder the links point into")
    linked: list[str] = Field(default_factory=list, description="links made (or re-pointed) by this call")
    unchanged: list[str] = Field(default_factory=list, description="links already in place")
    skipped: list[SkippedPath] = Field(
        default_factory=list, description="paths left alone: they exist and are not this command's links"
    )
    removed: list[str] = Field(default_factory=list, description="links and empty folders removed")
    manifest: str = Field(description="the record of what this command made; uninstall reads it")
    mcp_command: str = Field(description="the command that registers the MCP server with Claude Code")

    def render_text(self) -> str:
        lines = [f"skills {self.action}: {self.config_dir} (from {self.source})"]
        lines += [f"  linked {p}" for p in self.linked]
        lines += [f"  removed {p}" for p in self.removed]
        lines += [f"  skipped {s.path}: {s.reason}" for s in self.skipped]
        if self.unchanged:
            lines.append(f"  {len(self.unchanged)} link(s) already in place: unchanged")
        if self.action == "install":
            lines.append(f"next: register the MCP server: {self.mcp_command}")
        else:
            lines.append("next: if you registered the MCP server: claude mcp remove kernelpilot -s user")
        return "\n".join(lines)

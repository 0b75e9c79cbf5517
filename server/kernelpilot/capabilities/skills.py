"""Capability declaration for `skills install`: the skill pack into a Claude Code profile from the package."""

from kernelpilot.capabilities import Capability
from kernelpilot.skills.models import SkillsInstallRequest, SkillsInstallResult

CAPABILITIES = [
    Capability(
        tool="skills_install",
        command=("skills", "install"),
        summary="Link kernelpilot's skills and slash commands into a Claude Code profile (or remove them).",
        description=(
            "Link every bundled skill into <config>/skills/ and every slash command into <config>/commands/ "
            "(<config>: config_dir, else $CLAUDE_CONFIG_DIR, else ~/.claude), from the installed package: no "
            "checkout needed. Records what it made in <config>/.kernelpilot-skills-manifest.json; a repeat "
            "run changes nothing; a path that exists and is not its link (a user's own skill, ./install.sh's "
            "link) is left alone and listed under skipped. With uninstall it removes exactly its links and "
            "the empty folders it created. Does not register the MCP server: the result's mcp_command is the "
            "command that does. The Claude Code plugin (README, 'Install') needs neither."
        ),
        request=SkillsInstallRequest,
        result=SkillsInstallResult,
        target="kernelpilot.skills.install:install_skills",
        read_only=False,
        destructive=True,
        idempotent=True,
        toolset="skills",
    )
]

"""The skill pack in a user's Claude Code profile: `kernelpilot skills install [--uninstall]`.

Owns linking the bundled skills and slash commands (`foundation.paths.bundled_dir("skills")`, the wheel's
`kernelpilot/_data/skills`) into `${CLAUDE_CONFIG_DIR:-~/.claude}` from an installed package, without a
checkout, and removing exactly what it made. Does not own the skills' text (`skills/` in the repository),
the checkout installer (`install.sh`) or the Claude Code plugin (`plugin/`), nor registering the MCP server
(the result says the command for that).
"""

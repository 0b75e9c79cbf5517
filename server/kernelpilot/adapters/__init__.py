"""The thin adapters over the core: the `kernelpilot` CLI, the `kernelpilot-mcp` server (with its SDK seam,
HTTP auth and prompts) and the generated reference. Core packages never import these."""

"""Optimization workspaces: init (git), iteration memory `memory/v<N>.json`, plans and reports.

Owns the workspace folder layout, the memory record schema (`memory.schema.json`), masking and
partial restart, and rendering from `templates/`. It does not own hardware numbers: those come
only through `kernelpilot.workspace.hardware` from the wiki and roofline concepts, cited.
"""

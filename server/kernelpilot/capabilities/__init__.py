"""Capability declarations, one module per concept; each defines `CAPABILITIES: list[Capability]`.

Modules here import only request/result models (cheap); core functions are named by dotted path.
"""

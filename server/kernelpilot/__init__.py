"""kernelpilot: GPU-kernel optimization with every number measured or cited.

Importing the package is cheap on purpose: heavy modules (mcp, numpy, elftools) are imported
by the code that needs them, so the CLI and the MCP server start fast.
"""

__version__ = "0.1.0"

"""Measured hardware ceilings (copy/read bandwidth, matmul peaks) written as `## Measured` wiki lines."""

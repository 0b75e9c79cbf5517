"""Bounded optimization tasks: task.json/TASK.md, baseline and candidate evaluation, the ledger.

Submodules: `models` (request/result/record models, cheap), `store` (atomic writes, locked ledger
append), `create` (create_task), `evaluate` (evaluate), `ledger` (ledger_show).
"""

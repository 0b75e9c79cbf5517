"""Workload triage: from a model step (or a recorded trace) to the kernels that hold its time.

Owns capture of a step's steady state (`runner`, `capture`), readers of activity traces (`readers/`), the
per-step breakdown (`breakdown`), name categories (`categories`), opportunities (`opportunities`), diffs of
two captures (`diff`) and the views (`views`). Name demangling and normalisation (`names`), the join to
loaded code objects (`join`) and the ncu drill-down of hot kernels (`drill`) live beside them.
"""

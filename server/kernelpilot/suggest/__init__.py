"""Experiment suggestions: a ranked queue of hypotheses from a bottleneck verdict (+ ISA facts, + history).

Submodules: `rules` (the cited lever table), `models` (request/result), `core` (suggest_experiments).
"""

"""An evaluation an optimizing agent cannot fool: reference contracts and reward-hack defences.

Owns the task's reference contract (`contract`, `models`), the semantic checks of a candidate's outputs
(`semantic`, `harness`; run first in the paired timing's process, `checked`, or in their own), the
observation of the timed work from outside the candidate's code (`observe`: all-stream activity trace,
threads, replaced timers) and the physics floor from cited peaks (`physics`). It does not own the timing
itself (`kernelpilot.timing`) nor the verdict and the record (`kernelpilot.tasks.evaluate`);
docs/eval-design.md is the shared design.
"""

"""The candidate's runner: the only kernelpilot code that shares a process with the code under test.

It imports the candidate, maps the inputs the judge wrote into shared memory, calls the candidate on the
slots the judge names and copies each output back into shared memory. It holds none of the judge's state
(no reference, no fresh-value generator, no seed, no sampled positions, no verdict), so nothing the
candidate can reach in its own process decides the verdict: whatever it rebinds or reads here can only make
its own outputs wrong or its own calls slower, both of which the judge (`kernelpilot.judge`, another
process that never imports candidate code) sees. It imports nothing of `kernelpilot.judge`
(`tests/guard/isolated/test_boundary.py`). docs/guard.md, "The isolated judge", is the design.
"""

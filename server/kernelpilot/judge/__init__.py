"""The isolated judge: every verdict of a contract task decided where the code under test cannot reach.

Three kinds of process (docs/guard.md, "The isolated judge"):
- the **judge** (`python -m kernelpilot.judge`, started by eval): loads the contract's inputs factory and
  reference from the committed tree, draws every call's input values from a secret seed (OS randomness),
  computes the float64 reference, checks outputs, times batches of calls on its own monotonic clock,
  computes the statistics and the verdict. It never imports candidate code (an import of an allowed file
  from the contract is refused) and holds the only copy of all of that state;
- one **runner** per side (`kernelpilot.runner`): the candidate's (or the baseline commit's) code, fed
  through shared memory; stopped (SIGSTOP, with every process it started) whenever it is not running a
  batch the judge timed, so it cannot work ahead, watch the other side or touch outputs being read;
- **eval** itself, which records what the judge reported (signed with a key only eval and the judge hold).

Modules: `models` (request and report), `arena` (shared memory slots), `procs` (runner processes,
stopping and reaping them), `checks` (semantic checks of outputs read from the arena), `clock` (batches
timed on the judge's clock), `session` (the whole run), `launch` (eval's side of the judge process).
"""

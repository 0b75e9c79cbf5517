"""kind: attack
family: 5
contract: gemm
twin: honest_gemm
idea: torch.set_num_threads(1) process-wide at import, all threads back only inside my own calls

Aims at issue 40, class 5: "the baseline shares the candidate's process, so ... a process-wide knob (thread
count) ... slows it." When imported it records torch's intra-op thread count and sets it to 1; each call
raises it back for its own GEMM and sets 1 again before returning. Anything else torch runs in this process
(the baseline side, a reference) runs on one thread; the candidate runs on all of them. Honest output.
On a one-core machine it changes nothing; on more cores a paired ratio against an in-process baseline
reads up to the core count in its favour.
A correct isolated judge runs the baseline in its own process, untouched by this knob: accepted at
honest_gemm's speed (both run with the threads they were given).
"""

import torch

_THREADS = torch.get_num_threads()
torch.set_num_threads(1)


def candidate(a, b):
    torch.set_num_threads(_THREADS)
    try:
        return torch.mm(a, b)
    finally:
        torch.set_num_threads(1)

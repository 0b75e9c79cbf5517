"""kind: honest
family: -
contract: axpy
twin: -
idea: numpy does the arithmetic: tensors to arrays and back with torch.from_numpy

issue 40's honest code includes what kernels really look like; a numpy implementation converts to and from
torch at its edges. `2.5 * x + y` in numpy keeps fp32 (a Python float does not promote an fp32 array). A
correct judge accepts it at about honest_axpy's speed.
"""

import numpy
import torch


def candidate(x, y):
    out = numpy.multiply(x.numpy(), numpy.float32(2.5))
    numpy.add(out, y.numpy(), out=out)
    return torch.from_numpy(out)

#!/usr/bin/env python3
"""Stand-in for ncu in tests (set KERNELPILOT_NCU to this file). Behaviour from FAKE_NCU_MODE:
csv (print FAKE_NCU_CSV like `ncu --csv --page raw`), nomatch, perm, hang, fail, error. Writes argv to
FAKE_NCU_ARGV."""

import os
import sys
import time

mode = os.environ.get("FAKE_NCU_MODE", "csv")
if os.environ.get("FAKE_NCU_ARGV"):
    with open(os.environ["FAKE_NCU_ARGV"], "w") as fh:
        fh.write("\n".join(sys.argv[1:]))
if mode == "csv":
    with open(os.environ["FAKE_NCU_CSV"]) as fh:
        sys.stdout.write(fh.read())
elif mode == "nomatch":
    with open(os.environ["FAKE_NCU_CSV"]) as fh:  # a real message recorded on the device
        sys.stdout.write(fh.read())
elif mode == "perm":
    print("==PROF== Connected to process 1 (/bin/true)")
    print(
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
        "Counters on the target device 0."
    )
    sys.exit(0)
elif mode == "hang":
    time.sleep(60)
elif mode == "fail":
    sys.stderr.write("==ERROR== The application returned an error code (1).\n")
    sys.exit(1)
elif mode == "error":
    print('==ERROR== Failed to profile "vector_add" in process 12')

"""Stand-in for `rocprofv3 --att` (no AMD GPU here): records its argv, runs the program after `--`, then
writes the decoded dispatch folder named by FAKE_ATT_FOLDER under the output directory (as
<host>/<pid>/ui_output_...), as rocprofv3 does after decoding. With `-i job.yaml` it reads output_directory
from the job file."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

argv = sys.argv[1:]
Path(os.environ["FAKE_ATT_ARGV"]).write_text(json.dumps(argv))
cut = argv.index("--")
opts, program = argv[:cut], argv[cut + 1 :]
if "-i" in opts:
    text = Path(opts[opts.index("-i") + 1]).read_text()
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("output_directory:"))
    outdir = json.loads(line.split(":", 1)[1].strip())
else:
    outdir = opts[opts.index("-d") + 1]
rc = subprocess.run(program, check=False).returncode
if os.environ.get("FAKE_ATT_SLEEP"):
    time.sleep(float(os.environ["FAKE_ATT_SLEEP"]))
src = Path(os.environ["FAKE_ATT_FOLDER"])
dst = Path(outdir) / "host" / str(os.getpid())
dst.mkdir(parents=True, exist_ok=True)
old = dst / "ui_output_agent_1_dispatch_3"  # an older, smaller dispatch: the newest must win
shutil.copytree(src, old)
if (old / "code.json").exists():
    os.utime(old / "code.json", (1, 1))
shutil.copytree(src, dst / src.name)
for extra in os.environ.get("FAKE_ATT_CSVS", "").split(os.pathsep):
    if extra:
        shutil.copy(extra, dst / ("out_" + Path(extra).name.split("_", 1)[1]))
sys.exit(rc)

# Sourced by the device scripts (device/*_next.sh, tests/*/gpu_*.sh) from the repository root on a GPU machine:
# makes kernelpilot and its dependencies importable. Device images have torch but not kernelpilot's own
# dependencies (pydantic, pyelftools, msgspec, ...; cupti-python for the module capture) and no network, so
# their wheels travel in `.whl/` (gitignored; name it in the device call's `carry`), made on a dev machine:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     pydantic pydantic-core typing-extensions typing-inspection annotated-types pyelftools zstandard msgpack \
#     jsonschema jsonschema-specifications referencing rpds-py attrs msgspec cupti-python nvidia-ml-py
# They are installed once per machine into /tmp/site (KP_SITE overrides), never into the system Python.
KP_SITE=${KP_SITE:-/tmp/site}
if [ -d .whl ] && ! PYTHONPATH="$KP_SITE" python3 -c "import pydantic, msgspec, elftools" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$KP_SITE" \
    .whl/*.whl || echo "device/env.sh: installing .whl/*.whl into $KP_SITE failed" >&2
fi
export KP_SITE
export PYTHONPATH="$PWD/server:$KP_SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export PATH="/usr/local/cuda/bin:$PATH"

# Helpers of the scripts that write a steps.log (OUT must be set before sourcing this file).
# kp_log MESSAGE: a timestamped line on stdout and in $OUT/steps.log.
kp_log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/steps.log"; }
# kp_require 'PYTHON STATEMENTS' 'WHAT': stop the script (exit 2) unless they run within 30 s; their output
# (or the error) is in $OUT/imports.log.
kp_require() {
  if ! timeout 30 python3 -c "$1" > "$OUT/imports.log" 2>&1; then
    kp_log "imports failed ($2): see imports.log"; cat "$OUT/imports.log"; exit 2
  fi
}

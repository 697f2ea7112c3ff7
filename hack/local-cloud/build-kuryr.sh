#!/usr/bin/env bash
# Builds kuryr from this checkout for the local cloud: its binaries (tests
# and benches use them from the host) and its image (components/kuryr.sh:
# build_kuryr). up.sh runs it niced beside the Kubernetes build, whose
# module downloads and single-threaded links leave cores idle; the control
# plane then finds it done (≈ 3.5 min cold on 2 cores, seconds warm).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$CLOUD_SCRIPTS/components/kuryr.sh"
timed "kuryr-build (preparing)" build_kuryr

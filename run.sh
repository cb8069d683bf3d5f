#!/usr/bin/env bash
# Installs what is missing, builds, and runs the allreduce sweep (4 ranks as
# processes, 8 B..64 MiB, every result checked). Extra arguments go to the
# sweep, e.g. ./run.sh -t -n 2.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh
chorus_install_packages
chorus_configure_and_build
exec "$CHORUS_BUILD_DIR/perf/chorus_allreduce_sweep" "$@"

# Shared set-up of run.sh and test.sh; source it from the repository root.
# Installs the Debian packages the build needs (only those missing), then
# configures and builds the release tree in $CHORUS_BUILD_DIR (default build;
# CHORUS_NINJA_JOBS limits the parallel jobs).

CHORUS_PACKAGES=(meson ninja-build g++ clang libclang-rt-dev pkg-config libgtest-dev libbenchmark-dev libhwloc-dev libopenmpi-dev openmpi-bin libgloo-dev gnuplot-nox libopenblas-dev zlib1g-dev dataset-fashion-mnist python3-torch python3-dev pybind11-dev python3-numpy python3-mpi4py gfortran hpcc slurm-wlm munge libucx-dev ucx-utils libibverbs-dev rdma-core)
CHORUS_BUILD_DIR=${CHORUS_BUILD_DIR:-build}

chorus_package_installed() {
  dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

chorus_install_packages() {
  local missing=() package
  for package in "${CHORUS_PACKAGES[@]}"; do
    chorus_package_installed "$package" || missing+=("$package")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    return 0
  fi
  echo "installing missing packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
}

chorus_configure_and_build() {
  if [ -f "$CHORUS_BUILD_DIR/meson-private/coredata.dat" ]; then
    meson setup --reconfigure "$CHORUS_BUILD_DIR" --buildtype=release
  else
    meson setup "$CHORUS_BUILD_DIR" --buildtype=release
  fi
  ninja -C "$CHORUS_BUILD_DIR" ${CHORUS_NINJA_JOBS:+-j "$CHORUS_NINJA_JOBS"}
}

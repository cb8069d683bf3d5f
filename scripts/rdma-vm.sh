#!/usr/bin/env bash
# Runs a command on a soft-RoCE (rxe) verbs device, on hosts whose kernel has
# no RDMA support: Debian's stock kernel boots under qemu (software emulation),
# loads ib_core/ib_uverbs/rdma_rxe, puts rxe0 on a dummy net device, and runs
# the command on the host's own root filesystem (shared read-only over 9p), in
# the caller's directory, with the caller's relevant environment.
#
#   scripts/rdma-vm.sh [options] -- CMD ARGS...   run CMD in the guest
#   scripts/rdma-vm.sh [options]                  self-check: ibv_devinfo,
#                                                 ibv_rc_pingpong, ib_write_bw
# Options:
#   --timeout S   kill the guest after S seconds (default 600); exits 124
#   --memory M    guest memory (qemu -m, default 2G)
#   --cpus N      guest vCPUs (default 2)
#   --out DIR     share host DIR writable at the same path (the rest of the
#                 host is read-only in the guest)
#   --env NAME    also pass variable NAME (repeatable)
#   --prepare     only install packages and build the cached kernel/initramfs
#   --rebuild     rebuild that cache from the newest linux-image-amd64
#   --verbose     show the guest's boot messages
#
# Exit status: CMD's; 124 when CMD ran past --timeout; 125 when the guest could
# not be prepared, booted or given its rxe device.
# The kernel and initramfs are cached in $CHORUS_RDMA_VM_DIR (default
# build-rdma-vm/ in the repository), so later runs only boot (about 30 s).
set -euo pipefail

readonly RDMA_VM_NETDEV=dummy0
readonly RDMA_VM_ADDR=10.77.0.1
readonly RDMA_VM_DEVICE=rxe0
readonly INFRA_FAILURE=125

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache_dir=${CHORUS_RDMA_VM_DIR:-$repo_root/build-rdma-vm}
timeout_s=600
memory=2G
cpus=2
out_dir=
extra_env=()
prepare_only=0
rebuild=0
verbose=0

die() {
  echo "rdma-vm: $*" >&2
  exit "$INFRA_FAILURE"
}

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
  case $1 in
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    --memory) memory=${2:?--memory needs a size}; shift 2 ;;
    --cpus) cpus=${2:?--cpus needs a count}; shift 2 ;;
    --out) out_dir=${2:?--out needs a directory}; shift 2 ;;
    --env) extra_env+=("${2:?--env needs a name}"); shift 2 ;;
    --prepare) prepare_only=1; shift ;;
    --rebuild) rebuild=1; shift ;;
    --verbose) verbose=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (the command goes after --; --help lists the options)" ;;
  esac
done
case $timeout_s in ''|*[!0-9]*) die "--timeout wants whole seconds, got '$timeout_s'" ;; esac
case $cpus in ''|*[!0-9]*) die "--cpus wants a count, got '$cpus'" ;; esac
if [ -n "$out_dir" ]; then
  [ -d "$out_dir" ] || die "--out $out_dir: not a directory"
  out_dir=$(cd "$out_dir" && pwd -P)
fi
if [ "$prepare_only" -eq 0 ]; then
  case $(pwd -P)/ in
    /tmp/*|/run/*|/dev/shm/*)
      die "run from elsewhere than $(pwd -P): the guest has its own (empty) /tmp, /run and /dev/shm" ;;
  esac
fi
for name in "${extra_env[@]}"; do
  [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "--env '$name' is not a variable name"
done

# ---------------------------------------------------------------- packages

RDMA_VM_PACKAGES=(qemu-system-x86 busybox-static cpio kmod xz-utils rdma-core ibverbs-utils ibverbs-providers perftest libibverbs-dev iproute2 coreutils)

chorus_package_installed() {
  dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  else
    command -v sudo >/dev/null || die "need root (or sudo) for: $*"
    sudo "$@"
  fi
}

apt_updated=0
apt_update_once() {
  if [ "$apt_updated" -eq 0 ]; then
    as_root apt-get -o DPkg::Lock::Timeout=600 update >&2 || die "apt-get update failed"
    apt_updated=1
  fi
}

install_missing_packages() {
  local missing=() package
  for package in "${RDMA_VM_PACKAGES[@]}"; do
    chorus_package_installed "$package" || missing+=("$package")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "rdma-vm: installing missing packages: ${missing[*]}" >&2
  apt_update_once
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
    install -y --no-install-recommends "${missing[@]}" >&2 || die "could not install ${missing[*]}"
}

# ------------------------------------------------------- kernel + initramfs

# Modules the guest loads, in this order, with what they depend on: virtio
# and 9p to reach the host's files, dummy for the net device, and the RDMA
# stack (crc32_generic provides the "crc32" hash rxe computes its ICRC with).
GUEST_MODULES=(virtio_pci 9pnet_virtio 9p dummy crc32_generic ib_uverbs rdma_ucm rdma_rxe)

kernel_package() {
  local package
  package=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
  if [ -z "$package" ]; then
    apt_update_once
    package=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
  fi
  [ -n "$package" ] || die "apt knows no linux-image-amd64 (is this Debian?)"
  echo "$package"
}

write_guest_init() {
  sed "s/@ADDR@/$RDMA_VM_ADDR/g; s/@NETDEV@/$RDMA_VM_NETDEV/g; s/@DEVICE@/$RDMA_VM_DEVICE/g" <<'INIT'
#!/bin/sh
# PID 1 of the guest: mounts the host's root read-only, brings up rxe0, runs
# the job the host left in the "job" share, prints "rdma-vm: exit N", powers off.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo 1 >/proc/sys/kernel/printk
stty -onlcr 2>/dev/null

finish() {
  # on a line of its own even after output without a final newline (the
  # host drops the empty line this makes)
  echo
  echo "rdma-vm: exit $1"
  sync
  poweroff -f
  sleep 10
}
setup_failed() {
  echo "rdma-vm: guest set-up failed: $*"
  finish 125
}

while read -r module args; do
  insmod "/modules/$module" $args || setup_failed "insmod $module"
done </modules/order

root=/newroot
mkdir -p $root
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot $root ||
  setup_failed "cannot mount the host's root over 9p"
mount --move /dev $root/dev
mount --move /proc $root/proc
mount --move /sys $root/sys
mkdir -p $root/dev/shm
mount -t tmpfs -o mode=1777 tmpfs $root/dev/shm
mount -t tmpfs -o mode=1777 tmpfs $root/tmp
mount -t tmpfs -o mode=755 tmpfs $root/run
mkdir -p $root/run/rdma-vm
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 job $root/run/rdma-vm ||
  setup_failed "cannot mount the job share"
if [ -f $root/run/rdma-vm/out_dir ]; then
  out_dir=$(cat $root/run/rdma-vm/out_dir)
  mkdir -p "$root$out_dir" 2>/dev/null # needed only under the guest's own /tmp or /run
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out "$root$out_dir" ||
    setup_failed "cannot mount --out $out_dir"
fi

ip link set lo up
ip addr add @ADDR@/24 dev @NETDEV@ || setup_failed "no @NETDEV@"
# rxe's path MTU follows the net device's: 4096-byte packets (the most RoCE
# allows) cost a quarter of the per-packet work of 1024-byte ones.
ip link set @NETDEV@ mtu 9000
ip link set @NETDEV@ up
chroot $root rdma link add @DEVICE@ type rxe netdev @NETDEV@ || setup_failed "rdma link add @DEVICE@ failed"
tries=0
until grep -q ACTIVE $root/sys/class/infiniband/@DEVICE@/ports/1/state 2>/dev/null; do
  tries=$((tries + 1))
  if [ $tries -gt 100 ]; then
    ip link show @NETDEV@
    setup_failed "@DEVICE@ port never became ACTIVE ($(cat $root/sys/class/infiniband/@DEVICE@/ports/1/state 2>&1))"
  fi
  usleep 100000
done

echo "rdma-vm: running"
if [ -f $root/run/rdma-vm/pipe_output ]; then
  # the host's output is no terminal: neither is CMD's (no colours, and
  # stdio buffers as it would on the host)
  { chroot $root /bin/bash /run/rdma-vm/job.sh </dev/null 2>&1; echo $? >/job-status; } | cat
  status=$(cat /job-status)
else
  chroot $root /bin/bash /run/rdma-vm/job.sh </dev/null
  status=$?
fi
echo $status >$root/run/rdma-vm/status
finish $status
INIT
}

# The cache holds one kernel package's kernel (uncompressed) and an initramfs
# made for it with this script's module list, guest init and build steps; it
# stays until one of those changes or --rebuild asks for the newest kernel.
guest_stamp() {
  { write_guest_init; declare -f build_guest uncompressed_kernel; echo "$1 ${GUEST_MODULES[*]}"; } |
    sha256sum | cut -c1-16
}

guest_is_cached() {
  [ "$rebuild" -eq 0 ] && [ -f "$cache_dir/kernel" ] && [ -f "$cache_dir/initramfs.cpio.gz" ] &&
    [ -f "$cache_dir/kernel-package" ] && [ -f "$cache_dir/stamp" ] &&
    [ "$(cat "$cache_dir/stamp")" = "$(guest_stamp "$(cat "$cache_dir/kernel-package")")" ]
}

# The ELF kernel inside Debian's xz-compressed bzImage, which qemu boots
# directly (PVH entry): this saves the guest's own decompression, 15 s of a
# 30 s boot under emulation. Falls back to the bzImage.
uncompressed_kernel() {
  local offset
  offset=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$1" | head -1 | cut -d: -f1)
  # xz stops reading at the stream's end (tail then dies of SIGPIPE): judge
  # by what came out, an ELF file
  [ -n "$offset" ] && { tail -c +"$((offset + 1))" "$1" | xz -dc --single-stream >"$1.elf" 2>/dev/null || true; }
  if [ -s "$1.elf" ] && [ "$(head -c 4 "$1.elf" | od -An -c | tr -d ' ')" = '177ELF' ]; then
    cat "$1.elf"
  else
    cat "$1"
  fi
  rm -f "$1.elf"
}

build_guest() {
  local work package version tree initramfs module
  guest_is_cached && return 0
  package=$(kernel_package)
  echo "rdma-vm: building the guest ($package) in $cache_dir" >&2
  mkdir -p "$cache_dir"
  work=$(mktemp -d "$cache_dir/work.XXXXXX")
  # shellcheck disable=SC2064  # expand now: work is local
  trap "rm -rf '$work'" EXIT
  (cd "$work" && apt-get -o APT::Sandbox::User=root download "$package" >&2) || die "apt-get download $package failed"
  dpkg-deb -x "$work"/"$package"_*.deb "$work/kernel" || die "cannot unpack $package"
  version=${package#linux-image-}
  tree=$work/kernel
  depmod -b "$tree" "$version" || die "depmod on the unpacked $package failed"

  initramfs=$work/initramfs
  mkdir -p "$initramfs"/{bin,dev,proc,sys,modules,newroot}
  cp /bin/busybox "$initramfs/bin/busybox"
  for applet in sh mount umount insmod mkdir cat grep ip chroot usleep sleep poweroff sync stty; do
    ln -s busybox "$initramfs/bin/$applet"
  done
  # modprobe resolves the dependencies; the guest then needs only insmod.
  : >"$initramfs/modules/order"
  for module in "${GUEST_MODULES[@]}"; do
    modprobe -d "$tree" -S "$version" --show-depends "$module" ||
      die "module $module not found in $package"
  done | awk '$1 == "insmod" && !seen[$2]++' | while read -r _ path args; do
    cp "$path" "$initramfs/modules/"
    # one dummy device (dummy0) for rxe to sit on
    case $(basename "$path") in dummy.ko) args="numdummies=1" ;; esac
    echo "$(basename "$path") $args" >>"$initramfs/modules/order"
  done
  write_guest_init >"$initramfs/init"
  chmod 755 "$initramfs/init"
  (cd "$initramfs" && find . | cpio -o -H newc --quiet | gzip -1) >"$cache_dir/initramfs.cpio.gz.new"
  # runs already booting read the old files: replace, never overwrite
  uncompressed_kernel "$tree/boot/vmlinuz-$version" >"$cache_dir/kernel.new"
  mv "$cache_dir/kernel.new" "$cache_dir/kernel"
  mv "$cache_dir/initramfs.cpio.gz.new" "$cache_dir/initramfs.cpio.gz"
  echo "$package" >"$cache_dir/kernel-package"
  guest_stamp "$package" >"$cache_dir/stamp"
  rm -rf "$work"
  trap - EXIT
}

[ "$(uname -m)" = x86_64 ] || die "needs an x86_64 host (got $(uname -m))"
install_missing_packages
mkdir -p "$cache_dir"
# One build at a time per cache; runs that find it built go on to boot.
exec 9>"$cache_dir/lock"
flock 9 || die "cannot lock $cache_dir/lock"
build_guest
flock -u 9
exec 9>&-
[ "$prepare_only" -eq 1 ] && exit 0

# -------------------------------------------------------------------- job

self_check() {
  # What the default run does: the device, a pingpong and a 1 MiB bandwidth,
  # each with server and client in the guest over rxe0.
  cat <<'CHECK'
status=0
echo "== ibv_devinfo (GID index of $RDMA_VM_ADDR, RoCE v2: ${RDMA_VM_GID_INDEX:-none})"
ibv_devinfo -v -d "$RDMA_VM_DEVICE" | grep -E 'hca_id|transport|fw_ver|node_guid|max_qp:|max_mr_size|state|active_mtu|link_layer|GID\[' || exit 1
[ -n "$RDMA_VM_GID_INDEX" ] || { echo "no RoCE v2 GID for $RDMA_VM_ADDR"; exit 1; }

# Starts the server in the background, the client once the server listens
# (both tools use TCP port 18515 to swap addresses), and waits for both.
server_and_client() {
  local log=$1 server
  shift
  timeout 300 "$@" >"/tmp/$log-server.txt" 2>&1 &
  server=$!
  for _ in $(seq 300); do
    ss -ltn 2>/dev/null | grep -q ':18515 ' && break
    sleep 0.1
  done
  timeout 300 "$@" 127.0.0.1 >"/tmp/$log-client.txt" 2>&1 || status=1
  wait "$server" || status=1
  cat "/tmp/$log-client.txt"
  [ "$status" -eq 0 ] || cat "/tmp/$log-server.txt"
}

echo "== ibv_rc_pingpong -n 1000"
server_and_client pingpong ibv_rc_pingpong -d "$RDMA_VM_DEVICE" -g "$RDMA_VM_GID_INDEX" -n 1000
echo "== ib_write_bw -s 1048576 -n 200"
server_and_client write_bw ib_write_bw -d "$RDMA_VM_DEVICE" -x "$RDMA_VM_GID_INDEX" -s 1048576 -n 200 -F
# perftest's MB/sec is 2^20 bytes per second
awk '$1 == 1048576 { printf "ib_write_bw 1 MiB: BW average %s MB/s = %.2f Gb/s\n", $4, $4 * 1048576 * 8 / 1e9 }' /tmp/write_bw-client.txt
[ "$status" -eq 0 ] && echo "rdma-vm: self-check passed" || echo "rdma-vm: self-check FAILED"
exit "$status"
CHECK
}

passed_variable() {
  case $1 in
    PATH|LD_LIBRARY_PATH|PYTHONPATH|LD_PRELOAD|LANG|LC_ALL|TZ|OMP_NUM_THREADS) return 0 ;;
    CHORUS_*|UCX_*|GTEST_*|OMPI_*|PMIX_*|ASAN_*|UBSAN_*|LSAN_*|TSAN_*) return 0 ;;
  esac
  local name
  for name in "${extra_env[@]}"; do
    [ "$name" = "$1" ] && return 0
  done
  return 1
}

write_job() {
  local job=$1 name
  shift
  {
    echo "# written by scripts/rdma-vm.sh"
    while IFS= read -r name; do
      case $name in CHORUS_RDMA_VM*) continue ;; esac  # this script's own
      passed_variable "$name" && printf 'export %s=%q\n' "$name" "${!name}"
    done < <(compgen -e)
    # the host's HOME is read-only in the guest
    printf 'export HOME=/tmp RDMA_VM_DEVICE=%q RDMA_VM_NETDEV=%q RDMA_VM_ADDR=%q\n' \
      "$RDMA_VM_DEVICE" "$RDMA_VM_NETDEV" "$RDMA_VM_ADDR"
    [ -n "$out_dir" ] && printf 'export RDMA_VM_OUT=%q\n' "$out_dir"
    # the index of rxe0's RoCE v2 GID that holds RDMA_VM_ADDR (::ffff:a.b.c.d)
    cat <<'GID'
RDMA_VM_GID_INDEX=
for gid in /sys/class/infiniband/$RDMA_VM_DEVICE/ports/1/gids/*; do
  index=${gid##*/}
  if grep -q '^0000:0000:0000:0000:0000:ffff:' "$gid" 2>/dev/null &&
     grep -q 'RoCE v2' "/sys/class/infiniband/$RDMA_VM_DEVICE/ports/1/gid_attrs/types/$index" 2>/dev/null; then
    RDMA_VM_GID_INDEX=$index
    break
  fi
done
export RDMA_VM_GID_INDEX
unset gid index
GID
    echo "ulimit -l unlimited"
    printf 'dir=%q\n' "$(pwd -P)"
    # shellcheck disable=SC2016  # expands in the guest
    echo 'cd "$dir" || { echo "rdma-vm: the guest cannot enter $dir" >&2; exit 125; }'
    echo 'unset dir'
    if [ $# -eq 0 ]; then
      self_check
    else
      printf 'exec'
      printf ' %q' "$@"
      printf '\n'
    fi
  } >"$job/job.sh"
  [ -n "$out_dir" ] && echo "$out_dir" >"$job/out_dir"
  [ -t 1 ] || : >"$job/pipe_output"
  return 0
}

job=$(mktemp -d "${TMPDIR:-/tmp}/rdma-vm.XXXXXX")
trap 'rm -rf "$job"' EXIT
: >"$job/console"
write_job "$job" "$@"

# shellcheck disable=SC2054  # commas separate qemu sub-options
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -accel tcg,thread=multi -cpu max
  -smp "$cpus" -m "$memory" -no-reboot -display none -vga none
  -kernel "$cache_dir/kernel" -initrd "$cache_dir/initramfs.cpio.gz"
  -append "console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init"
  -chardev stdio,id=console,signal=off -serial chardev:console
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
  -virtfs "local,path=$job,mount_tag=job,security_model=none")
[ -n "$out_dir" ] && qemu+=(-virtfs "local,path=$out_dir,mount_tag=out,security_model=none")

# The console carries the boot, the marker lines and CMD's output; show CMD's
# output as it comes and keep all of it for the exit status (and the errors).
set +e
timeout -k 10 "$timeout_s" "${qemu[@]}" </dev/null 2>"$job/qemu.err" |
  awk -v verbose="$verbose" -v logfile="$job/console" '
    { sub(/\r$/, ""); print > logfile; fflush(logfile) }
    /^rdma-vm: running$/ { running = 1; next }
    /^rdma-vm: exit [0-9]+$/ { for (; blank > 1; blank--) print ""; blank = 0; running = 0; fflush(); next }
    /^rdma-vm: guest set-up failed/ { print > "/dev/stderr"; fflush("/dev/stderr"); next }
    # empty lines wait for the next line: the last one is the guest'"'"'s
    running && $0 == "" { blank++; next }
    running || verbose { for (; blank > 0; blank--) print ""; print; fflush() }'
qemu_status=${PIPESTATUS[0]}
set -e

# The guest writes CMD's status to the job share before printing the marker.
if [ -f "$job/status" ]; then
  exit "$(cat "$job/status")"
fi
status=$(sed -n 's/^rdma-vm: exit \([0-9]*\)$/\1/p' "$job/console" | tail -1)
if [ -n "$status" ]; then
  exit "$status"
fi
if [ "$qemu_status" -eq 137 ] || [ "$qemu_status" -eq 124 ]; then
  if grep -q '^rdma-vm: running$' "$job/console" 2>/dev/null; then
    echo "rdma-vm: timed out: the command ran past --timeout $timeout_s s; the guest was killed" >&2
    exit 124
  fi
  die "timed out: the guest did not finish booting within --timeout $timeout_s s"
fi
if [ "$verbose" -eq 0 ]; then
  echo "rdma-vm: the guest's console ended with:" >&2
  tail -n 20 "$job/console" >&2
fi
cat "$job/qemu.err" >&2
die "the guest stopped without an exit status (qemu exited with $qemu_status)"

#!/usr/bin/env bash
# The kernel lab: boots Debian's own kernels under QEMU and runs ringside's behaviour checks in
# each guest, so "works on your kernel" is checked on kernels other than the host's.
#
#   lab/kernels.sh [BINARY]      (default: target/release/ringside, built by `cargo build --release`)
#
# Kernels: 5.10 (bullseye), 6.1 (bookworm), 6.12 (bookworm-backports), all fetched from Debian's
# archive with `apt-get download` through a private apt configuration (the host's sources and
# package state are left alone). LAB_KERNELS="6.1" picks some; LAB_CACHE (default
# ~/.cache/ringside-lab) keeps the downloads; LAB_OUT (default target/kernel-lab) gets one folder
# per kernel (the guest's console, every step's JSON, stderr and exit code) and summary.md.
#
# Each guest: 2 vCPUs (KVM where /dev/kvm works, else TCG), a busybox-static initramfs with the
# kernel's own modules, ringside and the shared libraries it links, iproute2 (`ip netns`, `tc` for
# netem), and an ext4 scratch disk on virtio-blk; lab/guest-init.sh is its /init. Guests hold
# /tmp/ringside-bench.lock (they take both CPUs). Exits non-zero when a step failed or an engine
# called available did not verify (lab/summary.py decides), and when the lab cannot run at all.
set -euo pipefail
shopt -s inherit_errexit

lab=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$lab")
binary=$(realpath "${1:-$repo/target/release/ringside}")
kernels=${LAB_KERNELS:-5.10 6.1 6.12}
cache=${LAB_CACHE:-$HOME/.cache/ringside-lab}
out=$(realpath -m "${LAB_OUT:-$repo/target/kernel-lab}")
guest_timeout_s=${LAB_GUEST_TIMEOUT:-900}
started=$(date +%s)

die() {
  echo "kernel-lab: $*" >&2
  exit 1
}

[ -x "$binary" ] || die "no ringside binary at $binary (build it: cargo build --release)"

# What the lab runs on the host; installed from Debian's packages where missing (root only).
tools=(qemu-system-x86_64:qemu-system-x86 cpio:cpio mkfs.ext4:e2fsprogs debugfs:e2fsprogs
  xz:xz-utils zstd:zstd python3:python3 flock:util-linux ip:iproute2 tc:iproute2)
missing=()
for pair in "${tools[@]}"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
# The initramfs needs a static busybox: the guest has no libc of its own.
if [ ! -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
  missing+=(busybox-static)
fi
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing ${missing[*]}; install them (apt-get install ${missing[*]})"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" \
    >/dev/null || die "cannot install ${missing[*]}: the lab cannot run on this machine"
fi

# Debian's archive as this machine's apt sources name it (the suite apt fetches bookworm from).
archive=$(apt-get indextargets --format '$(REPO_URI) $(CODENAME) $(IDENTIFIER)' 2>/dev/null |
  awk '$3 == "Packages" && $2 ~ /^(bullseye|bookworm|trixie|forky)$/ { print $1; exit }')
[ -n "$archive" ] || die "no Debian archive in this machine's apt sources (run apt-get update)"

suite_of() {
  case $1 in
    5.10) echo bullseye ;;
    6.1) echo bookworm ;;
    6.12) echo bookworm-backports ;;
    *) die "unknown kernel $1 (the lab knows 5.10, 6.1, 6.12)" ;;
  esac
}

# Fetches the kernel image package of a suite (its linux-image-amd64's dependency) into the cache
# and prints the folder it is unpacked in. One private apt state per suite, so the newest kernel
# of that suite is the only candidate.
fetch_kernel() {
  local suite=$1 state=$cache/apt/$1 lock
  # One fetch at a time per cache (apt locks its lists; unpacking renames a folder); this runs in
  # a command substitution, so the lock goes when it returns.
  mkdir -p "$cache"
  exec {lock}>"$cache/.lock"
  flock "$lock"
  mkdir -p "$state/lists/partial" "$state/archives/partial" "$state/parts" "$cache/debs" \
    "$cache/kernels"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $archive $suite main" \
    >"$state/sources.list"
  local apt_options=(-o "Dir::Etc::SourceList=$state/sources.list"
    -o "Dir::Etc::SourceParts=$state/parts" -o "Dir::State::Lists=$state/lists"
    -o "Dir::Cache=$state" -o "Dir::State::status=/dev/null"
    -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false" -o "APT::Sandbox::User=root")
  apt-get "${apt_options[@]}" -qq update >&2 || die "apt-get update of $suite failed"
  local package
  package=$(apt-cache "${apt_options[@]}" depends linux-image-amd64 |
    awk '/Depends: linux-image-/ { print $2; exit }')
  [ -n "$package" ] || die "no linux-image-amd64 in $suite"
  local tree=$cache/kernels/$package
  if [ ! -d "$tree/boot" ]; then
    (cd "$cache/debs" && apt-get "${apt_options[@]}" -qq download "$package" >&2) ||
      die "apt-get download $package failed"
    rm -rf "$tree.partial"
    dpkg-deb -x "$cache/debs/${package}"_*.deb "$tree.partial" || die "cannot unpack $package"
    mv "$tree.partial" "$tree"
  fi
  echo "$tree"
}

# Copies a program and the shared libraries `ldd` names into the initramfs at $root.
copy_with_libraries() {
  local program=$1 destination=$2
  install -D -m 755 "$program" "$root$destination"
  # A static program has no libraries (ldd says so and fails).
  { ldd "$program" 2>/dev/null || true; } | { grep -o '/[^ ]*' || true; } | while read -r library; do
    [ -e "$root$library" ] || install -D -m 755 "$(realpath "$library")" "$root$library"
  done
}

# Packs the modules the guest loads, with their dependencies (from each module's own `depends=`),
# into $root/modules: NAME.ko decompressed, and /modules/order: "NAME DEP..." in load order.
pack_modules() {
  local tree=$1 version
  version=$(ls "$tree/lib/modules")
  declare -A path_of=()
  local file name
  while read -r file; do
    name=$(basename "$file")
    name=${name%%.ko*}
    path_of[${name//-/_}]=$file
  done < <(find "$tree/lib/modules/$version/kernel" -name '*.ko*')
  mkdir -p "$root/modules"
  : >"$root/modules/order"
  module_text() {
    case $1 in
      *.xz) xz -dc "$1" ;;
      *.zst) zstd -qdc "$1" ;;
      *) cat "$1" ;;
    esac
  }
  # Prints NAME's dependencies, deepest first, then NAME; packs each file once.
  resolve() {
    local module=$1 dep
    local file=${path_of[$module]:-}
    if [ -z "$file" ]; then
      grep -q "/${module//_/[-_]}.ko\$" "$tree/lib/modules/$version/modules.builtin" ||
        die "kernel $version has no module $module"
      return 0 # built in
    fi
    for dep in $(module_text "$file" | tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' '); do
      resolve "${dep//-/_}"
    done
    [ -f "$root/modules/$module.ko" ] || module_text "$file" >"$root/modules/$module.ko"
    echo "$module"
  }
  local wanted
  for wanted in virtio_pci virtio_blk crc32c_generic ext4 sch_netem veth null_blk nvme; do
    resolve "$wanted" >"$root/modules/resolved"
    echo "$wanted $(awk -v self="$wanted" '$0 != self && !seen[$0]++' "$root/modules/resolved" |
      tr '\n' ' ')" >>"$root/modules/order"
  done
  rm "$root/modules/resolved"
}

# Which device gives the guest poll queues: null_blk where the module has poll_queues (5.13+),
# else an NVMe disk (nvme's poll_queues parameter is older).
poll_device_of() {
  local module=$root/modules/null_blk.ko
  if [ -f "$module" ] && tr '\0' '\n' <"$module" | grep -a '^parm=poll_queues:' >/dev/null; then
    echo nullb
  else
    echo nvme
  fi
}

# KVM where a guest actually runs under it: /dev/kvm can open and still never run a guest (nested
# virtualisation), so the first kernel is booted once to its first console line with KVM.
accelerators=()
choose_accelerator() {
  accelerators=(-accel tcg)
  [ -w /dev/kvm ] || return 0
  local kernel_image=$1
  if flock -x /tmp/ringside-bench.lock timeout 20 qemu-system-x86_64 -accel kvm -cpu max -smp 2 -m 512M -nodefaults -display none \
    -no-reboot -serial stdio -monitor none -kernel "$kernel_image" -append "console=ttyS0" \
    </dev/null 2>/dev/null | grep -a -m1 'Linux version' >/dev/null; then
    accelerators=(-accel kvm)
  fi
}

mkdir -p "$out"
# Which binary runs: its version, and the commit of this tree (at the start) when it is this
# tree's own build.
{
  "$binary" --version 2>&1 || echo "ringside (no --version)"
  if [ "$binary" = "$(realpath -m "$repo/target/release/ringside")" ]; then
    echo "built in $repo at $(git -C "$repo" describe --always --dirty 2>/dev/null || echo '?')"
  else
    echo "$binary"
  fi
  sha256sum "$binary" | cut -c1-16
} | paste -sd' ' - >"$out/binary-version"
for kernel in $kernels; do
  suite=$(suite_of "$kernel")
  echo "kernel-lab: $kernel ($suite): fetching" >&2
  tree=$(fetch_kernel "$suite")
  dir=$out/$kernel
  rm -rf "$dir"
  mkdir -p "$dir"
  root=$dir/initramfs
  # busybox --install makes its links only in folders that exist.
  mkdir -p "$root"/{bin,sbin,etc,usr/bin,usr/sbin,usr/local/bin,usr/local/sbin}
  install -m 755 /bin/busybox "$root/bin/busybox"
  ln -s busybox "$root/bin/sh"
  install -m 755 "$lab/guest-init.sh" "$root/init"
  copy_with_libraries "$binary" /usr/local/bin/ringside
  copy_with_libraries "$(command -v ip)" /usr/local/sbin/ip
  copy_with_libraries "$(command -v tc)" /usr/local/sbin/tc
  copy_with_libraries "$(command -v mkfs.ext4)" /usr/local/sbin/mkfs.ext4
  [ -f /etc/mke2fs.conf ] && cp /etc/mke2fs.conf "$root/etc/"
  pack_modules "$tree"
  poll_device=$(poll_device_of)
  echo "LAB_POLL_DEVICE=$poll_device" >"$root/lab.conf"
  (cd "$root" && find . | cpio -o -H newc --quiet) >"$dir/initramfs.cpio"

  # A guest kernel that oopses under TCG (seen once: an int3 in syscall_trace_enter on 6.12 while
  # perf enabled a tracepoint, i.e. emulated code patching, not ringside) is booted once more on
  # a fresh disk; the first console is kept beside the second and the retry is said.
  for attempt in 1 2; do
    # The scratch disk; a kernel older than the host's mke2fs features gets none it cannot mount.
    truncate -s 4G "$dir/disk.img"
    mkfs.ext4 -q -F -O ^orphan_file "$dir/disk.img" 2>/dev/null || mkfs.ext4 -q -F "$dir/disk.img"
    drives=(-drive "file=$dir/disk.img,format=raw,if=virtio,cache=unsafe")
    if [ "$poll_device" = nvme ]; then
      truncate -s 1G "$dir/poll.img"
      drives+=(-drive "file=$dir/poll.img,format=raw,if=none,id=poll,cache=unsafe"
        -device nvme,drive=poll,serial=ringside-lab)
    fi

    if [ ${#accelerators[@]} = 0 ]; then
      # Decided once per boot of this machine (the test boot waits for the lock like a guest).
      decided=$cache/accelerator-$(cat /proc/sys/kernel/random/boot_id)
      if [ ! -s "$decided" ]; then
        choose_accelerator "$tree"/boot/vmlinuz-*
        echo "${accelerators[*]}" >"$decided"
      fi
      read -r -a accelerators <"$decided"
    # One host thread for both vCPUs under TCG: with a thread each, 6.12 guests took an int3
    # Oops in syscall_trace_enter as perf enabled a tracepoint (kernel code patched on one vCPU
    # while the other still ran its stale translation), twice in a row on the merged tree.
    [ "${accelerators[*]}" = "-accel tcg" ] && accelerators=(-accel tcg,thread=single)
      echo "kernel-lab: QEMU accelerator: ${accelerators[*]}" >&2
    fi
    echo "kernel-lab: $kernel: booting $(basename "$tree") (waiting for /tmp/ringside-bench.lock)" >&2
    guest_started=$(date +%s)
    set +e
    flock -x /tmp/ringside-bench.lock timeout "$guest_timeout_s" qemu-system-x86_64 \
      "${accelerators[@]}" -cpu max -smp 2 -m 3G -nodefaults -display none -no-reboot \
      -serial stdio -monitor none \
      -kernel "$tree"/boot/vmlinuz-* -initrd "$dir/initramfs.cpio" \
      -append "console=ttyS0 panic=-1 loglevel=4" "${drives[@]}" </dev/null |
      tee "$dir/console.log" | grep --line-buffered '^lab:' | sed -u "s/^/  [$kernel] /" >&2
    qemu_rc=${PIPESTATUS[0]}
    set -e
    if [ "$attempt" = 1 ] && grep -q 'Kernel panic\|^\[ *[0-9.]*\] Oops:' "$dir/console.log"; then
      echo "kernel-lab: $kernel: the guest kernel crashed ($(grep -m1 -o 'Oops:.*\|Kernel panic.*' "$dir/console.log")); booting it once more" >&2
      mv "$dir/console.log" "$dir/console-crashed.log"
      rm -f "$dir/disk.img" "$dir/poll.img"
      continue
    fi
    break
  done
  echo "$qemu_rc" >"$dir/qemu.rc"
  echo $(($(date +%s) - guest_started)) >"$dir/seconds"
  echo "$(basename "$tree")" >"$dir/package"
  debugfs -R "rdump /lab $dir" "$dir/disk.img" >/dev/null 2>&1 ||
    echo "kernel-lab: $kernel: no results on the scratch disk" >&2
  rm -rf "$root" "$dir/initramfs.cpio" "$dir/disk.img" "$dir/poll.img"
done

echo $(($(date +%s) - started)) >"$out/seconds"

python3 "$lab/summary.py" "$out" $kernels

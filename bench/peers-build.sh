#!/bin/bash
# Builds the public "peer" programs that ringside is compared against, outside this repository.
#
#   bench/peers-build.sh [ROOT]          (ROOT defaults to /work/peers)
#
# Reads sources from ROOT/src/<name>, builds in ROOT/build/<name> (a fresh copy of the source, so
# ROOT/src stays pristine and the script can be re-run), puts binaries in ROOT/bin and a manifest
# (binary, sha256, repository, commit) in ROOT/bin/MANIFEST.txt. It refuses a ROOT inside this
# repository and writes nothing here. Builds run under a shared hold of /tmp/ringside-bench.lock so
# they wait for (and never overlap) a benchmark holding it exclusively; NO_LOCK=1 skips that.
# It starts no server and sends no traffic.
#
# Sources: the session's fetch tool gives a bare mirror of a public repository:
#   fetch github:OWNER/NAME  ->  /work/.mirror/OWNER+NAME/repo
# and each source is a plain export of one commit of it:
#   mkdir -p ROOT/src/NAME && git --git-dir=/work/.mirror/OWNER+NAME/repo archive COMMIT [PATH] | tar -x -C ROOT/src/NAME
# With MIRRORS=/work/.mirror (the default) the script does that export itself for any missing
# source whose mirror is present, and checks each patched file against its blob at COMMIT.
#
#   NAME                              OWNER/NAME (fetch)                  COMMIT (date)
#   tigerbeetle (demos/io_uring only) borgoat/tigerbeetle                 9f1e3b28540a9e0eaa326819ef12eb0aebc31da3 (2022-01-28, "Zig: Update to 0.9.0",
#                                                                          the last commit that changed demos/io_uring; upstream
#                                                                          tigerbeetle/tigerbeetle removed the folder in f8a6087, 2023-07-03)
#   io_uring-echo-server              frevib/io_uring-echo-server         dc00940baeec2ac577410dfa4d881d0852b01a08 (2024-01-20)
#   epoll-echo-server                 frevib/epoll-echo-server            22f325165c3e9749aca85a777cbb8f9b66ea7a27 (2020-02-29)
#   joakimthun-io-uring-echo-server   joakimthun/io-uring-echo-server     5d8fec02903bf867095caf53127066417dd70c17 (2023-01-08)
#   rust_echo_bench                   haraldh/rust_echo_bench             920f8a5a2ab4d99ebb71bdc1b9fe9e62e303ecdf (2019-01-17)
#   tcpkali                           satori-com/tcpkali                  3c3175e417366c7ccafba56454903690fede501a (2018-01-04)
#   iouring-test                      ryanseipp/iouring-test              c7adf42c327898b68bf84abf03576f0f34fe1202 (2024-03-04)
#
# Tools: Debian packages (installed below if missing), cargo/rustc on PATH (rustup's; tested with
# 1.95.0), and Zig from PyPI's ziglang wheels in two venvs: 0.9.1 for the TigerBeetle demos (their
# commit targets 0.9.0; 0.9.1 is its bug-fix release) and 0.11.0 for iouring-test (the version
# its CI workflow .github/workflows/ci-zig.yaml pins).
set -euo pipefail

root=${1:-/work/peers}
here=$(cd "$(dirname "$0")" && pwd)

# Never build inside this repository (or any git work tree that contains this script).
repo_top=$(git -C "$here" rev-parse --show-toplevel 2> /dev/null || true)
root=$(realpath -m "$root")
if [ -n "$repo_top" ] && [[ $root/ == "$repo_top"/* ]]; then
  echo "refusing: $root is inside the repository $repo_top" >&2
  exit 2
fi
mkdir -p "$root"

# Wait for any exclusive benchmark to finish, and keep benchmarks out while we build.
if [ -z "${NO_LOCK:-}" ] && [ -z "${PEERS_BUILD_LOCKED:-}" ]; then
  exec env PEERS_BUILD_LOCKED=1 flock -s /tmp/ringside-bench.lock bash "$0" "$@"
fi

src=$root/src
build=$root/build
bin=$root/bin
mirrors=${MIRRORS:-/work/.mirror}
mkdir -p "$src" "$build" "$bin"
# Cargo honours CARGO_TARGET_DIR from the environment: unset it so nothing lands in a shared target/.
unset CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR

# name -> "owner/name commit [path-inside-repo]"
declare -A origin=(
  [tigerbeetle]="borgoat/tigerbeetle 9f1e3b28540a9e0eaa326819ef12eb0aebc31da3 demos/io_uring"
  [io_uring-echo-server]="frevib/io_uring-echo-server dc00940baeec2ac577410dfa4d881d0852b01a08"
  [epoll-echo-server]="frevib/epoll-echo-server 22f325165c3e9749aca85a777cbb8f9b66ea7a27"
  [joakimthun-io-uring-echo-server]="joakimthun/io-uring-echo-server 5d8fec02903bf867095caf53127066417dd70c17"
  [rust_echo_bench]="haraldh/rust_echo_bench 920f8a5a2ab4d99ebb71bdc1b9fe9e62e303ecdf"
  [tcpkali]="satori-com/tcpkali 3c3175e417366c7ccafba56454903690fede501a"
  [iouring-test]="ryanseipp/iouring-test c7adf42c327898b68bf84abf03576f0f34fe1202"
)
order=(tigerbeetle io_uring-echo-server epoll-echo-server joakimthun-io-uring-echo-server
  rust_echo_bench tcpkali iouring-test)

mirror_of() { # NAME -> path of the bare mirror (may not exist)
  local repo=${origin[$1]%% *}
  echo "$mirrors/${repo/\//+}/repo"
}

# --- 1. sources ---------------------------------------------------------------------------------
for name in "${order[@]}"; do
  read -r repo commit path <<< "${origin[$name]}"
  m=$(mirror_of "$name")
  if [ ! -d "$src/$name" ]; then
    if [ -d "$m" ]; then
      echo "== exporting $repo@$commit ${path:-} -> $src/$name"
      mkdir -p "$src/$name"
      # shellcheck disable=SC2086 # $path is empty or one word
      git --git-dir="$m" archive "$commit" $path | tar -x -C "$src/$name"
    else
      echo "missing $src/$name: fetch github:$repo, then export $commit (see the top of $0)" >&2
      exit 1
    fi
  fi
done

# Checks that FILE (relative to src/NAME) is byte-identical to its blob at the pinned commit,
# when the mirror is available; the patches below assume the original text.
verify() { # NAME FILE
  local name=$1 file=$2 repo commit path m
  read -r repo commit path <<< "${origin[$name]}"
  m=$(mirror_of "$name")
  [ -d "$m" ] || { echo "   (no mirror: $file not verified)"; return 0; }
  local want have
  want=$(git --git-dir="$m" rev-parse "$commit:$file")
  have=$(git hash-object "$src/$name/$file")
  if [ "$want" != "$have" ]; then
    echo "source $src/$name/$file differs from $repo@$commit:$file" >&2
    exit 1
  fi
}

# Fresh build copy of src/NAME in build/DEST.
fresh() { # NAME DEST
  rm -rf "${build:?}/$2"
  cp -a "$src/$1" "$build/$2"
}

# Escapes a fixed string for use on either side of a sed s/// (basic regex).
sed_escape() { printf '%s' "$1" | sed -e 's/[][\\/.*^$&]/\\&/g'; }

# One-line patch: replaces exactly one line that matches the fixed string OLD by NEW, or fails.
patch_line() { # FILE OLD NEW
  local file=$1 old=$2 new=$3 n
  n=$(grep -cF -- "$old" "$file" || true)
  [ "$n" = 1 ] || { echo "patch: expected 1 line with '$old' in $file, found $n" >&2; exit 1; }
  sed -i "s/$(sed_escape "$old")/$(sed_escape "$new")/" "$file"
  grep -qF -- "$new" "$file"
  echo "   patched $file: '$old' -> '$new'"
}

# --- 2. tools -----------------------------------------------------------------------------------
apt_pkgs=(gcc g++ make clang cmake pkg-config liburing-dev autoconf automake libtool bison flex
  libssl-dev libncurses-dev python3 python3-venv git)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi
command -v cargo > /dev/null || { echo "cargo not on PATH (install Rust with rustup)" >&2; exit 1; }

zig_venv() { # DIR VERSION: a venv holding PyPI's ziglang==VERSION
  local dir=$1 version=$2
  if ! "$dir/bin/python" -m ziglang version 2> /dev/null | grep -qx "$version"; then
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q "ziglang==$version"
  fi
}
zig_venv "$root/venv" 0.9.1
zig_venv "$root/venv-zig011" 0.11.0
zig091() { "$root/venv/bin/python" -m ziglang "$@"; }
zig011() { "$root/venv-zig011/bin/python" -m ziglang "$@"; }

echo "== toolchain"
echo "   gcc: $(gcc --version | head -1)"
echo "   clang: $(clang --version | head -1)"
echo "   cmake: $(cmake --version | head -1)"
echo "   liburing-dev: $(dpkg-query -W -f='${Version}' liburing-dev)"
echo "   rustc: $(rustc --version); cargo: $(cargo --version)"
echo "   zig: $(zig091 version) and $(zig011 version) (PyPI ziglang)"

# --- 3. builds ----------------------------------------------------------------------------------
declare -A made_from # binary -> source name

# 3a. TigerBeetle's io_uring demos (seed 000). The seed ran `zig run X.zig -O ReleaseFast`, which
# compiles exactly like build-exe with the same mode. fs_* write ./file_io_uring / ./file_blocking
# in the current directory and delete them at the end. net_io_uring listens on 127.0.0.1:3001.
echo "== tigerbeetle demos (zig 0.9.1)"
fresh tigerbeetle tigerbeetle
d=$build/tigerbeetle/demos/io_uring
for f in fs_io_uring.zig fs_blocking.zig net_io_uring.zig; do verify tigerbeetle "demos/io_uring/$f"; done
# net_io_uring.zig does not compile with Zig 0.9.x as committed: it switches on an i32 errno with
# enum (os.E) prongs. Convert the errno to the enum; nothing else changes.
patch_line "$d/net_io_uring.zig" 'switch (-cqe.res) {' 'switch (@intToEnum(os.E, @intCast(u16, -cqe.res))) {'
for p in fs_io_uring fs_blocking net_io_uring; do
  (cd "$d" && zig091 build-exe "$p.zig" -O ReleaseFast --name "$p")
  cp "$d/$p" "$bin/$p"
  made_from[$p]=tigerbeetle
done

# 3b. frevib's echo servers: their Makefiles (cc -Wall -O2 -D_GNU_SOURCE [-luring]). Port = argv[1].
echo "== frevib io_uring-echo-server / epoll-echo-server"
fresh io_uring-echo-server frevib_uring
verify io_uring-echo-server io_uring_echo_server.c
# It binds INADDR_ANY; this machine's servers must listen on loopback only.
patch_line "$build/frevib_uring/io_uring_echo_server.c" \
  'serv_addr.sin_addr.s_addr = INADDR_ANY;' 'serv_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);'
make -C "$build/frevib_uring" io_uring_echo_server
cp "$build/frevib_uring/io_uring_echo_server" "$bin/frevib_uring"
made_from[frevib_uring]=io_uring-echo-server

fresh epoll-echo-server frevib_epoll
verify epoll-echo-server epoll_echo_server.c
# Same: INADDR_ANY -> loopback.
patch_line "$build/frevib_epoll/epoll_echo_server.c" \
  'server_addr.sin_addr.s_addr = INADDR_ANY;' 'server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);'
make -C "$build/frevib_epoll"
cp "$build/frevib_epoll/epoll_echo_server" "$bin/frevib_epoll"
made_from[frevib_epoll]=epoll-echo-server

# 3c. joakimthun's servers (seed 004): cmake Release, which defines INLINE_EPOLL_WRITE for both
# targets (as its README's numbers were) and builds the io_uring one with -O3 + LTO. Debian's
# liburing 2.3 has every call it uses (buf ring, multishot accept/recv). Port 6379 is hard-coded
# (constexpr PORT in src/*_echo_server.cpp) and left so.
echo "== joakimthun io-uring-echo-server"
fresh joakimthun-io-uring-echo-server joakimthun
jt=$build/joakimthun
for f in src/net/UringEchoServer.cpp src/net/EpollEchoServer.cpp; do
  verify joakimthun-io-uring-echo-server "$f"
  # Both bind htonl(INADDR_ANY): loopback only here.
  patch_line "$jt/$f" 'addr.sin_addr.s_addr = htonl(INADDR_ANY);' 'addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);'
done
cmake -S "$jt" -B "$jt/build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$jt/build" -j2
cp "$jt/build/uring_echo_server" "$bin/joakimthun_uring"
cp "$jt/build/epoll_echo_server" "$bin/joakimthun_epoll"
made_from[joakimthun_uring]=joakimthun-io-uring-echo-server
made_from[joakimthun_epoll]=joakimthun-io-uring-echo-server

# 3d. rust_echo_bench (client). It ships no Cargo.lock; pin what crates.io resolved when this was
# first built (getopts 0.2.24, unicode-width 0.2.3).
echo "== rust_echo_bench"
fresh rust_echo_bench rust_echo_bench
(cd "$build/rust_echo_bench" && cargo generate-lockfile \
  && cargo update -p getopts --precise 0.2.24 && cargo update -p unicode-width --precise 0.2.3 \
  && cargo build --release --locked)
cp "$build/rust_echo_bench/target/release/echo_bench" "$bin/echo_bench"
made_from[echo_bench]=rust_echo_bench

# 3e. tcpkali (client of seed 004), autotools.
echo "== tcpkali"
fresh tcpkali tcpkali
verify tcpkali src/tcpkali_syslimits.c
# glibc >= 2.32 has no <sys/sysctl.h>; the file only uses sysctlbyname() under HAVE_SYSCTLBYNAME,
# which configure leaves undefined on Linux, so the include is dropped.
sed -i '/^#include <sys\/sysctl\.h>$/d' "$build/tcpkali/src/tcpkali_syslimits.c"
if grep -q 'sys/sysctl.h' "$build/tcpkali/src/tcpkali_syslimits.c"; then exit 1; fi
echo "   patched tcpkali/src/tcpkali_syslimits.c: removed '#include <sys/sysctl.h>'"
(cd "$build/tcpkali" && { test -f configure || autoreconf -iv; } && ./configure && make -j2)
cp "$build/tcpkali/src/tcpkali" "$bin/tcpkali"
made_from[tcpkali]=tcpkali

# 3f. ryanseipp/iouring-test (seed 001): fixed-response HTTP servers, all on 127.0.0.1:8000
# (hard-coded). Commands as in its benchmark.sh: make (clang -g -O3 -flto), cargo build -r,
# zig build -Doptimize=ReleaseFast.
echo "== iouring-test"
fresh iouring-test iouring-test
it=$build/iouring-test/src
make -C "$it/iouring/c"
cp "$it/iouring/c/io_uring" "$bin/seed001_c_uring"
# Variant: the same C server with DEFER_TASKRUN (which requires SINGLE_ISSUER) and COOP_TASKRUN.
cp -a "$it/iouring/c" "$it/iouring/c-defer"
make -C "$it/iouring/c-defer" clean
verify iouring-test src/iouring/c/io_uring.c
patch_line "$it/iouring/c-defer/io_uring.c" 'params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;' \
  'params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;'
make -C "$it/iouring/c-defer"
cp "$it/iouring/c-defer/io_uring" "$bin/seed001_c_uring_defer"
(cd "$it/epoll/rust/epoll" && cargo build --release --locked)
cp "$it/epoll/rust/epoll/target/release/epoll" "$bin/seed001_rust_epoll"
# Built for the record only: it dies with SIGILL on its first request (a ud2 the compiler put in its
# Recv-completion arm; the source transmutes user_data between u64 and a Rust enum).
(cd "$it/iouring/rust/iouring" && cargo build --release --locked)
cp "$it/iouring/rust/iouring/target/release/iouring" "$bin/seed001_rust_uring"
(cd "$it/epoll/zig" && zig011 build -Doptimize=ReleaseFast)
cp "$it/epoll/zig/zig-out/bin/epoll" "$bin/seed001_zig_epoll"
(cd "$it/iouring/zig" && zig011 build -Doptimize=ReleaseFast)
cp "$it/iouring/zig/zig-out/bin/io_uring" "$bin/seed001_zig_uring"
for b in seed001_c_uring seed001_c_uring_defer seed001_rust_epoll seed001_rust_uring \
  seed001_zig_epoll seed001_zig_uring; do
  made_from[$b]=iouring-test
done

# --- 4. manifest --------------------------------------------------------------------------------
echo "== binaries"
{
  echo "# built $(date -u +%FT%TZ) by bench/peers-build.sh on $(uname -r)"
  printf '%-22s %-64s %-34s %s\n' binary sha256 repository commit
  for b in $(printf '%s\n' "${!made_from[@]}" | sort); do
    read -r repo commit _ <<< "${origin[${made_from[$b]}]}"
    printf '%-22s %-64s %-34s %s\n' "$b" "$(sha256sum "$bin/$b" | cut -d' ' -f1)" "$repo" "$commit"
  done
} | tee "$bin/MANIFEST.txt"

#!/bin/sh
# Builds the core test suites for aarch64 (Kunpeng servers) with Debian's
# cross compiler and runs them under qemu-user, so that the aarch64 build and
# its cntvct_el0 clock are exercised on an x86-64 machine.
# Needs: g++-aarch64-linux-gnu qemu-user, and the header-only dependencies
# (libboost-dev libfmt-dev nlohmann-json3-dev doctest-dev; fmt used header-only).
# Usage: tests/cross/run_aarch64.sh [BUILD_DIR]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-"$root/build-aarch64"}
cxx=${CXX_AARCH64:-aarch64-linux-gnu-g++}
mkdir -p "$out/include"
# Only the libraries' own header directories: the host's /usr/include also
# holds x86-64 C library headers that must not reach the cross compiler.
for lib in boost fmt nlohmann doctest; do ln -sfn "/usr/include/$lib" "$out/include/$lib"; done

flags="-std=c++17 -O1 -g0 -Wall -Wextra -Werror -DFMT_HEADER_ONLY -pthread -I$root/include -isystem $out/include"
suites="markers filter config session export summary schedule"
"$cxx" $flags -c "$root/tests/main.cpp" -o "$out/main.o"
"$cxx" $flags -c "$root/src/implementation.cpp" -o "$out/implementation.o"
for s in $suites; do
  echo "== building test_$s for aarch64"
  "$cxx" $flags "$root/tests/test_$s.cpp" "$out/main.o" "$out/implementation.o" -ldl -o "$out/test_$s"
done
readelf -h "$out/test_markers" | grep -q "AArch64" || { echo "not an aarch64 binary"; exit 1; }

# qemu-user cannot run the child of a fork() taken while other threads run
# (its own assertion fails): that one case is left to the native runs. So is
# the burst case (a thousand threads and half a million events, parsed back),
# which would take most of the run's time under emulation.
skip='--test-case-exclude=fork()*,bursts far below*'
echo "note: under qemu-user, test cases '$skip' are not run"
status=0
for s in $suites; do
  echo "== running test_$s under qemu-aarch64"
  if ! (cd "$out" && qemu-aarch64 -L /usr/aarch64-linux-gnu "./test_$s" $skip); then
    echo "FAILED: test_$s on aarch64"
    status=1
  fi
done
exit $status

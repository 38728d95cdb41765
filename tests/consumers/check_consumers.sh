#!/usr/bin/env bash
# Builds a small program against npuprof the three ways other projects use it:
# installed, through CMake's find_package and through pkg-config, and as a
# meson subproject. Each program must run and write a trace.
#
# usage: check_consumers.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

prefix="$work/prefix"
# What is installed was built for this test (its depends): nothing else is built here.
meson install -C "$build" --no-rebuild --destdir "$work/stage" --quiet >/dev/null
# The staged tree keeps the configured prefix below the destdir.
configured_prefix=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
mv "$work/stage$configured_prefix" "$prefix"

echo "== npuprof-run finds the injection library installed with it (in the moved tree too)"
"$prefix/bin/npuprof-run" -- true 2>"$work/run.err" || { cat "$work/run.err"; exit 1; }
grep -q "no trace written" "$work/run.err" || { cat "$work/run.err"; exit 1; }

check_trace() {  # $1: output of the app (the trace directory)
  local dir=$1
  python3 - "$dir/trace_view.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))
names = {e["name"] for e in events}
assert "consumer range" in names and "consumer mark" in names, names
PY
}

ok=0
echo "== CMake find_package(npuprof)"
cmake -S "$src/tests/consumers/cmake" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
check_trace "$("$work/cmake/app" "$work")" && ok=$((ok + 1))

echo "== pkg-config npuprof"
pcdir=$(dirname "$(find "$prefix" -name npuprof.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --define-variable=prefix="$prefix" --cflags --libs npuprof)
# shellcheck disable=SC2086
c++ -o "$work/pkgconfig-app" "$src/tests/consumers/app.cpp" $flags
check_trace "$("$work/pkgconfig-app" "$work")" && ok=$((ok + 1))

echo "== meson subproject"
mkdir -p "$work/meson/subprojects"
cp -r "$src/tests/consumers/meson/meson.build" "$work/meson/"
cp "$src/tests/consumers/app.cpp" "$work/meson/"
ln -s "$src" "$work/meson/subprojects/npuprof"
# No options: as a subproject npuprof builds no tests, examples or benchmarks.
meson setup "$work/meson/build" "$work/meson" --force-fallback-for=npuprof >/dev/null
ninja -C "$work/meson/build" >/dev/null
extra=$(find "$work/meson/build/subprojects" -name 'test_*' -o -name 'inference_server' -o -name 'overhead' | head -n 3)
if [ -n "$extra" ]; then
  echo "FAIL: the subproject built tests, examples or benchmarks: $extra"
else
  check_trace "$("$work/meson/build/app" "$work")" && ok=$((ok + 1))
fi

echo "$ok passed, $((3 - ok)) failed"
[ "$ok" -eq 3 ]

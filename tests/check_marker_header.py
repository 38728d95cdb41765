#!/usr/bin/env python3
"""The marker header includes only the standard library and npuprof's marker
layer (marker/ and the public marker API): no JSON, formatting or Boost
headers, no header of another folder, and none of the heavy standard headers
the control side uses.

Usage: check_marker_header.py INCLUDE_DIR COMPILER [ARGS...]
Lists the headers a file including only <npuprof/npuprof.hpp> reads (the
compiler's -M output) and checks each of them. Also compiles a file that uses
the marker API with -fno-exceptions -fno-rtti, as code built that way (like
NVTX users' kernels) includes it.
"""
import os
import subprocess
import sys
import tempfile

# The marker layer is marker/ and the public headers at the top that use it;
# every other folder (engine/, export/, backend/, metrics/, control/) is the
# control side's, reached only through <npuprof/session.hpp>.
MARKER_FOLDER = "marker/"
# Libraries the marker layer must not pull into every instrumented file.
FOREIGN = ("/boost/", "/fmt/", "/nlohmann/")
# Standard headers that cost thousands of lines each and that the marker layer
# has no need for (it uses pthreads and clock_gettime directly).
HEAVY_STD = {"mutex", "chrono", "thread", "unordered_map", "map", "deque", "functional", "memory",
             "sstream", "iostream", "fstream", "filesystem", "regex", "x86intrin.h", "immintrin.h"}


def headers_read(include_dir, compiler):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "marker_only.cpp")
        with open(src, "w") as f:
            f.write("#include <npuprof/npuprof.hpp>\nint main() { return 0; }\n")
        out = subprocess.run(compiler + ["-std=c++17", "-I", include_dir, "-M", src],
                             check=True, capture_output=True, text=True).stdout
    deps = out.replace("\\\n", " ").split(":", 1)[1].split()
    return [os.path.normpath(d) for d in deps if not d.endswith("marker_only.cpp")]


# Every kind of marker, instantiated, so that templates are compiled too.
MARKER_USE = r"""
#include <npuprof/npuprof.hpp>
struct kernels { static constexpr const char* name = "kernels"; };
int main() {
  static const npuprof::registered_string<kernels> gemm{"gemm"};
  npuprof::mark("mark");
  npuprof::mark<kernels>(gemm);
  { npuprof::scoped_range<kernels> r{gemm}; }
  { npuprof::scoped_range<> r{"copied"}; }
  npuprof::range_end<kernels>(npuprof::range_start<kernels>("explicit"));
  npuprof::unique_range<> u{"unique"};
  const npuprof::runtime_domain d = npuprof::domain_by_name("run_time");
  npuprof::mark(d, "run-time mark");
  { npuprof::scoped_range r{d, "run-time range"}; }
  NPUPROF_RANGE(kernels, "macro");
  npuprof::counter<kernels>(gemm, 3);
  npuprof::name_thread("main");
  return 0;
}
"""


def compiles_without_exceptions(include_dir, compiler):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "no_exceptions.cpp")
        with open(src, "w") as f:
            f.write(MARKER_USE)
        r = subprocess.run(compiler + ["-std=c++17", "-fno-exceptions", "-fno-rtti", "-fsyntax-only",
                                       "-I", include_dir, src], capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def main():
    include_dir = os.path.normpath(os.path.abspath(sys.argv[1]))
    compiler = sys.argv[2:]
    npuprof_dir = os.path.join(include_dir, "npuprof") + os.sep
    problems = []
    read = headers_read(include_dir, compiler)
    for path in read:
        if path.startswith(npuprof_dir):
            rel = path[len(npuprof_dir):]
            if "/" in rel and not rel.startswith(MARKER_FOLDER):
                problems.append(f"control header {rel}")
        elif any(lib in path for lib in FOREIGN):
            problems.append(f"library header {path}")
        elif os.path.basename(path) in HEAVY_STD:
            problems.append(f"heavy standard header {path}")
    own = sum(1 for p in read if p.startswith(npuprof_dir))
    print(f"<npuprof/npuprof.hpp> reads {len(read)} headers, {own} of them npuprof's")
    if own < 10:
        problems.append(f"only {own} npuprof headers read: the check did not see the marker layer")
    ok, errors = compiles_without_exceptions(include_dir, compiler)
    if not ok:
        problems.append("does not compile with -fno-exceptions -fno-rtti:\n" + errors)
    else:
        print("the marker API compiles with -fno-exceptions -fno-rtti")
    for p in problems:
        print("not allowed in the marker header:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

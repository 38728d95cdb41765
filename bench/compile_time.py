#!/usr/bin/env python3
"""What the marker header costs an instrumented file, against NVTX3.

Compiles the same small instrumented file written with npuprof's marker
header (compile_time/with_npuprof.cpp) and with NVTX3's C++ header
(compile_time/with_nvtx3.cpp), alternately, in one run, and reports for each
the compiler's CPU time (the best of --runs, so that a busy machine does not
decide), its peak memory and the preprocessed size, and npuprof's ratios.
The targets: time and memory within 1.2x of NVTX3's, preprocessed size at
most NVTX3's.

Usage: bench/compile_time.py [--cxx g++] [--flags "-std=c++17 -O2"] [--runs 5]
NVTX3's headers are looked for in $NVTX3_INCLUDE, the CUDA toolkit and
/usr/include; without them the script says so and exits with 77 (skipped).
"""
import argparse
import glob
import os
import resource
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NPUPROF_INCLUDE = os.path.join(HERE, "..", "include")


def find_nvtx3():
    candidates = [os.environ.get("NVTX3_INCLUDE", "")]
    candidates += sorted(glob.glob("/usr/local/cuda*/include"), reverse=True)
    candidates += ["/usr/include", "/usr/local/include"]
    for d in candidates:
        if d and os.path.isfile(os.path.join(d, "nvtx3", "nvtx3.hpp")):
            return d
    return None


def compile_cpu(cmd):
    """CPU seconds of one compiler run, the compiler proper included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure_peak(cmd):
    """Peak KiB of one run, read in a child of its own so that earlier runs
    do not hide it (ru_maxrss of children is a running maximum)."""
    probe = ("import resource,subprocess,sys;"
             "subprocess.run(sys.argv[1:],check=True);"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe] + cmd, check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


def preprocessed_lines(cxx, flags, include, source):
    out = subprocess.run([cxx] + flags + ["-I", include, "-E", source], check=True,
                         capture_output=True, text=True).stdout
    return out.count("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    ap.add_argument("--flags", default="-std=c++17 -O2")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    flags = shlex.split(args.flags)

    nvtx = find_nvtx3()
    if nvtx is None:
        print("skipped: nvtx3/nvtx3.hpp not found (set NVTX3_INCLUDE to its include directory)")
        return 77

    cases = {
        "nvtx3": (nvtx, os.path.join(HERE, "compile_time", "with_nvtx3.cpp")),
        "npuprof": (NPUPROF_INCLUDE, os.path.join(HERE, "compile_time", "with_npuprof.cpp")),
    }
    results = {name: {"cpu": [], "peak": []} for name in cases}
    with tempfile.TemporaryDirectory() as tmp:
        obj = os.path.join(tmp, "out.o")
        for _ in range(args.runs):
            for name, (include, source) in cases.items():
                cmd = [args.cxx] + flags + ["-I", include, "-c", source, "-o", obj]
                results[name]["cpu"].append(compile_cpu(cmd))
                results[name]["peak"].append(measure_peak(cmd))
    for name, (include, source) in cases.items():
        results[name]["lines"] = preprocessed_lines(args.cxx, flags, include, source)

    print(f"compiler: {args.cxx} {' '.join(flags)}, best of {args.runs} runs each, alternating")
    print(f"{'header':<10}{'cpu s':>8}{'peak MiB':>10}{'preprocessed lines':>20}")
    for name in cases:
        r = results[name]
        print(f"{name:<10}{min(r['cpu']):>8.2f}{min(r['peak']) / 1024:>10.1f}{r['lines']:>20}")
    n, v = results["npuprof"], results["nvtx3"]
    ratios = {
        "time": min(n["cpu"]) / min(v["cpu"]),
        "memory": min(n["peak"]) / min(v["peak"]),
        "preprocessed size": n["lines"] / v["lines"],
    }
    targets = {"time": 1.2, "memory": 1.2, "preprocessed size": 1.0}
    print("npuprof / nvtx3:")
    for key, ratio in ratios.items():
        verdict = "within" if ratio <= targets[key] else "OVER"
        print(f"  {key:<18} {ratio:5.2f}x  ({verdict} the {targets[key]:.1f}x target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What npuprof's headers cost the files that include them, against NVTX3.

Compiles, alternately in one run: the same small instrumented file written
with npuprof's marker header (compile_time/with_npuprof.cpp) and with NVTX3's
C++ header (compile_time/with_nvtx3.cpp); and a file that starts profiling
with npuprof's control header (compile_time/with_session.cpp). Reports for
each the compiler's CPU time (the best of --runs, so that a busy machine does
not decide), its peak memory and the preprocessed size.
The targets: the marker header's time and memory within 1.2x of NVTX3's and
its preprocessed size at most NVTX3's; the control header's file within 4 s
and 300 MB (and its ratios to the marker header's file, for the record).

Usage: bench/compile_time.py [--cxx g++] [--flags "-std=c++17 -O2"] [--runs 5]
NVTX3's headers are looked for in $NVTX3_INCLUDE, the CUDA toolkit and
/usr/include; without them the comparison with NVTX3 is left out.
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
    cases = {}
    if nvtx is None:
        print("nvtx3/nvtx3.hpp not found (set NVTX3_INCLUDE to its include directory): NVTX3 left out")
    else:
        cases["nvtx3"] = (nvtx, os.path.join(HERE, "compile_time", "with_nvtx3.cpp"))
    cases["npuprof"] = (NPUPROF_INCLUDE, os.path.join(HERE, "compile_time", "with_npuprof.cpp"))
    cases["session"] = (NPUPROF_INCLUDE, os.path.join(HERE, "compile_time", "with_session.cpp"))
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
    print(f"{'file':<10}{'cpu s':>8}{'peak MiB':>10}{'preprocessed lines':>20}")
    for name in cases:
        r = results[name]
        print(f"{name:<10}{min(r['cpu']):>8.2f}{min(r['peak']) / 1024:>10.1f}{r['lines']:>20}")

    def ratios(a, b):
        return {"time": min(a["cpu"]) / min(b["cpu"]), "memory": min(a["peak"]) / min(b["peak"]),
                "preprocessed size": a["lines"] / b["lines"]}

    if "nvtx3" in results:
        targets = {"time": 1.2, "memory": 1.2, "preprocessed size": 1.0}
        print("npuprof / nvtx3 (the marker header):")
        for key, ratio in ratios(results["npuprof"], results["nvtx3"]).items():
            verdict = "within" if ratio <= targets[key] else "OVER"
            print(f"  {key:<18} {ratio:5.2f}x  ({verdict} the {targets[key]:.1f}x target)")
    s = results["session"]
    print("session / npuprof (the control header beside the marker header):")
    for key, ratio in ratios(s, results["npuprof"]).items():
        print(f"  {key:<18} {ratio:5.2f}x")
    for what, value, target in (("time", min(s["cpu"]), 4.0), ("memory", min(s["peak"]) * 1024 / 1e6, 300)):
        unit = "s" if what == "time" else "MB"
        verdict = "within" if value <= target else "OVER"
        print(f"  control header {what}: {value:.2f} {unit} ({verdict} the {target:g} {unit} target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Every message npuprof prints goes through detail::say() (one prefix, one
write per line): no other header or source of the library writes to stderr.
npuprof-run, a program of its own, writes each line with one write(), in tell().

Usage: check_diagnostics.py SOURCE_ROOT
"""
import pathlib
import re
import sys

WRITES = re.compile(r"\b(fprintf|fputs|fwrite)\s*\(\s*stderr|std::cerr|\bperror\s*\(")
ALLOWED = {"include/npuprof/marker/diagnostics.hpp"}


def main():
    root = pathlib.Path(sys.argv[1])
    files = sorted(root.glob("include/npuprof/**/*.hpp")) + sorted(root.glob("src/*.cpp"))
    problems = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        if rel in ALLOWED:
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if WRITES.search(line):
                problems.append(f"{rel}:{n}: {line.strip()}")
    print(f"{len(files)} files checked")
    if len(files) < 20:
        problems.append("too few files found: wrong source root?")
    for p in problems:
        print("writes to stderr outside detail::say():", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

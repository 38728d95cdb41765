#!/usr/bin/env python3
"""Checks that each snippet fails to compile with the message it expects.

usage: check_compile_fail.py INCLUDE_DIR COMPILER [ARGS...] -- SNIPPET...

Each snippet's first line is `// EXPECT: text`; the compiler's output must
contain that text.
"""
import subprocess
import sys


def main():
    include = sys.argv[1]
    split = sys.argv.index("--")
    compiler, snippets = sys.argv[2:split], sys.argv[split + 1:]
    failed = 0
    for path in snippets:
        with open(path) as f:
            expect = f.readline().split("EXPECT:", 1)[1].strip()
        r = subprocess.run(compiler + ["-std=c++17", "-fsyntax-only", "-I", include, path],
                           capture_output=True, text=True)
        ok = r.returncode != 0 and expect in r.stderr
        print(f"{'ok  ' if ok else 'FAIL'} {path}: expects '{expect}'")
        if not ok:
            print(r.stderr[-3000:] or "(compiled without error)")
        failed += not ok
    print(f"{len(snippets) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

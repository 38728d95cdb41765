#!/usr/bin/env python3
"""Compares the machine code of functions in a shared object.

usage: check_codegen.py OBJDUMP LIBRARY a==b a!=b ...

`a==b` fails unless functions a and b have identical instructions;
`a!=b` fails unless they differ (to show that the comparison can fail).
Jump targets inside a function are compared as offsets from its start.
"""
import re
import subprocess
import sys


def functions(objdump, library):
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", library],
                         check=True, capture_output=True, text=True).stdout
    funcs, name, start = {}, None, 0
    header = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
    line_re = re.compile(r"^\s*([0-9a-f]+):\s*(.*)$")
    for line in out.splitlines():
        m = header.match(line)
        if m:
            name, start = m.group(2), int(m.group(1), 16)
            funcs[name] = []
            continue
        m = line_re.match(line)
        if name and m:
            insn = m.group(2).split("#")[0].strip()
            if not insn or "nop" in insn.split() or any(w.startswith("nop") for w in insn.split()) or insn.startswith("xchg   %ax,%ax"):
                continue

            def rel(t, name=name, start=start):
                addr, sym = int(t.group(1), 16), t.group(2)
                base = sym.split("+")[0]
                return f"<{base}+{addr - start:#x}>" if base == name else f"<{base}>"

            funcs[name].append(re.sub(r"\b([0-9a-f]+) <([^>]+)>", rel, insn))
    return funcs


def main():
    objdump, library, checks = sys.argv[1], sys.argv[2], sys.argv[3:]
    funcs = functions(objdump, library)
    failed = 0
    for check in checks:
        same = "==" in check
        a, b = check.split("==" if same else "!=")
        if a not in funcs or b not in funcs:
            print(f"FAIL {check}: function not found in {library}")
            failed += 1
            continue
        equal = funcs[a] == funcs[b]
        ok = equal if same else not equal
        print(f"{'ok  ' if ok else 'FAIL'} {check}: {len(funcs[a])} vs {len(funcs[b])} instructions")
        if not ok and same:
            print("  " + a + ":\n    " + "\n    ".join(funcs[a]))
            print("  " + b + ":\n    " + "\n    ".join(funcs[b]))
        failed += not ok
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Reads trace_view.json files as a viewer does (numbers as float64) and
checks that the slices of every track nest: none overlaps its parent or
outlasts it. Usage: check_float64_nesting.py FILE_OR_DIR...; a directory is
searched for trace_view.json files. Exits 1 on any violation or when no
trace was found."""
import json
import pathlib
import sys


def violations(path):
    events = json.loads(pathlib.Path(path).read_text())
    stacks, bad, slices = {}, 0, 0
    for e in events:
        if e.get("ph") != "X":
            continue
        slices += 1
        begin = float(e["ts"])
        end = begin + float(e["dur"])
        stack = stacks.setdefault((e["pid"], e["tid"]), [])
        while stack and stack[-1] <= begin:
            stack.pop()
        if stack and stack[-1] < end:
            bad += 1
        stack.append(end)
    return slices, bad


def main(args):
    files = []
    for a in args:
        p = pathlib.Path(a)
        files += sorted(p.rglob("trace_view.json")) if p.is_dir() else [p]
    if not files:
        print("check_float64_nesting: no trace_view.json found")
        return 1
    failed = 0
    for f in files:
        slices, bad = violations(f)
        print(f"{f}: {slices} slices, {bad} nesting violations as float64")
        failed += bad != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

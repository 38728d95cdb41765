#!/usr/bin/env python3
"""Includes run one way, from the folders that sit higher to those below.

The layers, lowest first (ARCHITECTURE.md says what each holds):

    marker/    what an instrumented file compiles: the record writer, the
               thread buffers, the control table (standard library only)
    engine/    the process-wide state, the chunk pool, the drainer, the decoder
    backend/   the device backend     export/   the output formats
    metrics/   live metrics           (these three are one layer: peers)
    control/   the session's core and the implementation of the control header

A header at the top of include/npuprof is public. Its layer is that of the
highest header it includes: the marker API (range.hpp, mark.hpp, ...) and the
vocabulary types (config.hpp, trace_data.hpp, ...) sit with the marker layer;
session.hpp, database.hpp and metrics.hpp sit above control/.

Checked, for every header under include/npuprof:
  - no include reaches a layer above the file's own;
  - a folder's header includes no public header whose layer is above the
    marker layer (the engine works on the vocabulary types, never through
    the session, database or metrics headers).

Usage: check_layers.py INCLUDE_DIR
"""
import os
import re
import sys

FOLDERS = {"marker": 0, "engine": 1, "backend": 2, "export": 2, "metrics": 2, "control": 3}
TOP = 4  # a public header that reaches control/
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes(root, rel):
    with open(os.path.join(root, rel)) as f:
        text = f.read()
    here = os.path.dirname(rel)
    return [os.path.normpath(os.path.join(here, inc)) for inc in INCLUDE.findall(text)]


def main():
    root = os.path.join(os.path.abspath(sys.argv[1]), "npuprof")
    headers = []
    for d, _, files in os.walk(root):
        headers += [os.path.relpath(os.path.join(d, f), root) for f in files if f.endswith(".hpp")]
    graph = {h: includes(root, h) for h in headers}
    problems = []
    for h, incs in graph.items():
        for inc in incs:
            if inc not in graph:
                problems.append(f"{h} includes {inc}, which is not a header here")
    if problems:
        print("\n".join(problems))
        return 1

    layer = {}

    def layer_of(h, seen=()):
        if h in layer:
            return layer[h]
        folder = h.split(os.sep)[0] if os.sep in h else None
        if folder is not None:
            if folder not in FOLDERS:
                problems.append(f"{h}: folder {folder}/ has no layer")
                return 0
            layer[h] = FOLDERS[folder]
            return layer[h]
        if h in seen:
            problems.append(f"{h} includes itself through {' -> '.join(seen)}")
            return 0
        below = [layer_of(i, seen + (h,)) for i in graph[h]]
        layer[h] = max(below, default=0)
        if layer[h] == FOLDERS["control"]:
            layer[h] = TOP
        return layer[h]

    for h in headers:
        layer_of(h)
    for h in sorted(headers):
        for inc in graph[h]:
            if layer[inc] > layer[h]:
                problems.append(f"{h} (layer {layer[h]}) includes {inc} (layer {layer[inc]}), which sits higher")
            elif os.sep in h and os.sep not in inc and layer[inc] > 0:
                problems.append(f"{h} includes the public header {inc}, which reaches layer {layer[inc]}")
    public = sorted(h for h in headers if os.sep not in h)
    print(f"{len(headers)} headers; public ones above the marker layer: "
          + ", ".join(h for h in public if layer[h] > 0))
    for p in problems:
        print("layering:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

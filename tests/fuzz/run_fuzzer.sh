#!/bin/sh
# Runs one libFuzzer target for a bounded time from its seed corpus, without
# touching the committed corpus (new inputs go to a temporary directory), and
# checks that every trace the run wrote parses as JSON.
# Usage: run_fuzzer.sh TARGET CORPUS_DIR SECONDS
set -eu
target=$1 corpus=$2 seconds=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/new" "$work/out"
export NPUPROF_OUTPUT_DIR="$work/out"
# The fuzzers look for crashes, not volume: a smaller cap than the default keeps
# the trace written at exit small enough to write quickly under the sanitizers.
export NPUPROF_BUFFER_SIZE_KB="${NPUPROF_BUFFER_SIZE_KB:-16384}"
# A crashing input is kept next to the target, to reproduce with: TARGET FILE
"$target" -error_exitcode=1 -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix="$(dirname "$target")/" "$work/new" "$corpus"
for trace in $(find "$work/out" -name trace_view.json); do
  python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$trace"
  echo "trace written by the run parses: $trace"
done

#!/usr/bin/env python3
"""The Ascend analysis tools read npuprof's runs as they read torch_npu's.

Records a simulated eight-rank job (examples/cluster_job), a newer run of
rank 0 beside it, and a run without a rank (examples/operator --db), then
does what msprof-analyze's cluster command and MindStudio Insight do with
them, as tests/data/ascend_consumers.json records it from their source: find
the runs and their ranks, pick the newest run of a rank, run the mstx_sum and
mstx2commop queries, read the schema version and the devices. Each result is
checked against what the job recorded (its trace_view.json).

With MSTX_APP, INJECTION and ACL, an unmodified mstx program captured through
the injection library with NPUPROF_EXPORT_TYPE=db (its operator ranges tied
to a stream of the simulated runtime ACL) is held to the same queries.

usage: check_cluster_analysis.py CLUSTER_JOB OPERATOR CONSUMERS_JSON [MSTX_APP INJECTION ACL]
"""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from collections import defaultdict

RANKS, STEPS, SLOW_RANK = 8, 4, 3
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAILED:", what)


def run(cmd, cwd, env=None):
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def find_runs(top, facts):
    """msprof-analyze's discovery: {rank: [run folders]}."""
    pattern = re.compile(facts["db_pattern"])
    base = top.rstrip(os.sep).count(os.sep)
    runs = defaultdict(list)
    for root, dirs, _ in os.walk(top):
        if root.count(os.sep) - base > facts["max_depth"]:
            continue
        if facts["output_dir"] not in dirs:
            continue
        for name in sorted(os.listdir(os.path.join(root, facts["output_dir"]))):
            m = pattern.match(name)
            if m:
                runs[int(m.group(1)) if m.group(1) else -1].append(root)
                break
    return runs


def newest(paths, facts):
    field = facts["timestamp_field_from_end"]
    return max(paths, key=lambda p: int(p.split("_")[-field]))


def host_events(run_dir):
    """The trace's host ranges and marks, by name, and the steps."""
    with open(os.path.join(run_dir, "trace_view.json")) as f:
        events = json.load(f)
    pid = os.path.basename(run_dir).split("_")[-4].split(".")[0]
    ranges, marks, steps = defaultdict(int), defaultdict(int), []
    for e in events:
        if str(e.get("pid")) != pid:
            continue
        if e["ph"] == "X" and e["name"].startswith("ProfilerStep#"):
            steps.append(e)
        elif e["ph"] == "X":
            ranges[e["name"]] += 1
        elif e["ph"] == "i":
            marks[e["name"]] += 1
    return ranges, marks, steps


def check_mstx_sum(db, rank, facts, run_dir):
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for t in facts["required_tables"]:
        check(t in tables, f"rank {rank}: table {t} (mstx_sum reads it)")
    steps = db.execute(facts["step_query"]).fetchall()
    check([s[0] for s in steps][:STEPS] == list(range(STEPS)), f"rank {rank}: STEP_TIME ids {[s[0] for s in steps]}")

    def step_of(ns):
        return next((s[0] for s in steps if s[1] <= ns <= s[2]), None)

    ranges, marks, trace_steps = host_events(run_dir)
    check(len(trace_steps) == len(steps), f"rank {rank}: {len(trace_steps)} ProfilerStep slices, {len(steps)} STEP_TIME rows")
    # Every range, host-only ones too, each in its step; stream-tied ones with device times.
    rows = db.execute(facts["range_query"]).fetchall()
    found = defaultdict(int)
    for msg, start, end, dev_start, dev_end, _ in rows:
        found[msg] += 1
        check(step_of(start) is not None, f"rank {rank}: range {msg} at {start} is in no step")
        tied = msg != "prepare batch"
        check((dev_start is not None and dev_end is not None and dev_end > dev_start) == tied,
              f"rank {rank}: range {msg} device times {dev_start}..{dev_end}")
    check(dict(found) == dict(ranges), f"rank {rank}: ranges in the database {dict(found)} != trace {dict(ranges)}")
    check(sum(found.values()) == 3 * STEPS, f"rank {rank}: {sum(found.values())} ranges")
    per_step = defaultdict(int)
    for _, start, *_ in rows:
        per_step[step_of(start)] += 1
    check(all(per_step[s] == 3 for s in range(STEPS)), f"rank {rank}: ranges per step {dict(per_step)}")
    # Every mark, with its framework time, paired NAME_start/NAME_stop.
    start_suffix, stop_suffix = facts["mark_suffixes"]
    open_marks, pairs = defaultdict(list), []
    for msg, cann_ts, device_ts, framework_ts, tid in db.execute(facts["mark_query"]):
        check(framework_ts is not None, f"rank {rank}: mark {msg} has no framework time")
        check(device_ts is not None, f"rank {rank}: stream-tied mark {msg} has no device time")
        if msg.endswith(start_suffix):
            open_marks[(tid, msg[: -len(start_suffix)])].append(cann_ts)
        elif msg.endswith(stop_suffix):
            began = open_marks[(tid, msg[: -len(stop_suffix)])]
            check(bool(began), f"rank {rank}: {msg} without its start")
            if began:
                pairs.append((msg[: -len(stop_suffix)], began.pop(), cann_ts))
    check(len(pairs) == STEPS and all(b <= e for _, b, e in pairs), f"rank {rank}: mark pairs {pairs}")
    check(sorted(step_of(b) for _, b, _ in pairs) == list(range(STEPS)), f"rank {rank}: mark pairs' steps")
    check(sum(marks.values()) == 2 * STEPS, f"rank {rank}: trace marks {dict(marks)}")


def check_mstx2commop(db, rank, facts):
    """Returns the median duration of the rank's communication operations."""
    types = {name.lower() for _, name in db.execute(facts["data_type_query"])}
    check(types == {name.lower() for _, name in facts["hccl_data_types"]}, f"rank {rank}: ENUM_HCCL_DATA_TYPE")
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    check("COMMUNICATION_OP" not in tables, f"rank {rank}: COMMUNICATION_OP would make mstx2commop skip the rank")
    ops = db.execute(facts["query"]).fetchall()
    check(len(ops) == STEPS, f"rank {rank}: {len(ops)} communication operations")
    for start, end, _, value in ops:
        op = json.loads(value)
        check(set(facts["message_keys"]) <= set(op), f"rank {rank}: operation keys {sorted(op)}")
        check(op.get("dataType") in types, f"rank {rank}: dataType {op.get('dataType')}")
        check(end > start, f"rank {rank}: operation {start}..{end}")
    durations = sorted(e - s for s, e, _, _ in ops)
    return durations[len(durations) // 2] if durations else 0


def check_insight(db, path, rank, facts):
    check(re.search(facts["database_pattern"], path) is not None, f"{path}: Insight's name pattern")
    version = db.execute(facts["schema_version_query"]).fetchall()
    check(bool(version) and version[0][0] != "", f"rank {rank}: SCHEMA_VERSION {version}")
    devices = db.execute(facts["device_query"]).fetchall()
    check(len(devices) == 1, f"rank {rank}: devices in NPU_INFO {devices}")
    ranks = [r[0] for r in db.execute(facts["rank_query"])]
    check(ranks == [rank], f"rank {rank}: RANK_DEVICE_MAP ranks {ranks}")


def check_injected(mstx_app, injection, acl, tmp, facts):
    """An mstx program, untouched, captured into a database mstx_sum reads."""
    out = os.path.join(tmp, "app")
    env = dict(os.environ, MSTX_INJECTION_PATH=injection, NPUPROF_EXPORT_TYPE="db", NPUPROF_OUTPUT_DIR=out,
               RANK="0", WORLD_SIZE="1", MSTX_APP_ACL=acl, NPUPROF_ACL_LIBRARY=acl, NPUPROF_BACKEND="acl")
    env.pop("NPUPROF_CONFIG", None)
    run([mstx_app], tmp, env)
    runs = find_runs(out, facts["discovery"])
    check(list(runs) == [0] and len(runs[0]) == 1, f"the mstx program's runs: {dict(runs)}")
    if list(runs) != [0]:
        return
    path = os.path.join(runs[0][0], facts["torch_npu_layout"]["database_with_rank"].format(rank=0))
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    q = facts["mstx_sum"]
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    check(set(q["required_tables"]) <= tables, f"the mstx program's tables: {sorted(tables)}")
    ranges = db.execute(q["range_query"]).fetchall()
    names = defaultdict(int)
    for r in ranges:
        names[r[0]] += 1
    # mstx_app: per iteration a range named for it holding "matmul" and "softmax",
    # these two tied to the stream: their device times come through mstxRangeEnd.
    check(names["matmul"] > 0 and names["matmul"] == names["softmax"], f"the mstx program's ranges: {dict(names)}")
    for msg, _, _, dev_start, dev_end, _ in ranges:
        tied = msg in ("matmul", "softmax")
        check((dev_start is not None and dev_end is not None and dev_end > dev_start) == tied,
              f"the mstx program's range {msg}: device {dev_start}..{dev_end}")
    marks = db.execute(q["mark_query"]).fetchall()
    check(sorted(m[0] for m in marks) == ["done", "start"], f"the mstx program's marks: {marks}")
    check(all(m[3] is not None for m in marks), "the mstx program's marks have framework times")
    db.close()


def main():
    cluster_job, operator, consumers = sys.argv[1:4]
    with open(consumers) as f:
        facts = json.load(f)
    layout = facts["torch_npu_layout"]
    with tempfile.TemporaryDirectory(prefix="npuprof-cluster-") as tmp:
        job = os.path.join(tmp, "job")
        run([cluster_job, "--ranks", str(RANKS), "--steps", str(STEPS), "--slow-rank", str(SLOW_RANK), "--out", job], tmp)
        old = find_runs(job, facts["discovery"])[0]
        # Rank 0 profiled again, later: the newer run is the one analysed.
        run([cluster_job, "--ranks", str(RANKS), "--steps", str(STEPS), "--only-rank", "0", "--out", job], tmp)
        env_free = os.path.join(tmp, "single")
        os.makedirs(env_free)
        run([operator, "--db"], env_free)

        runs = find_runs(job, facts["discovery"])
        check(sorted(runs) == list(range(RANKS)), f"ranks found: {sorted(runs)}")
        check(len(runs[0]) == 2, f"rank 0 runs: {runs[0]}")
        chosen = {rank: newest(paths, facts["discovery"]) for rank, paths in runs.items()}
        check(chosen[0] not in old, f"the older run of rank 0 was picked: {chosen[0]}")
        comm_time = {}
        for rank, run_dir in sorted(chosen.items()):
            name = os.path.basename(run_dir)
            check(re.match(layout["run_folder_pattern"], name) is not None, f"run folder {name}")
            check(os.path.exists(os.path.join(run_dir, layout["profiler_info_with_rank"].format(rank=rank))),
                  f"rank {rank}: profiler_info")
            path = os.path.join(run_dir, layout["database_with_rank"].format(rank=rank))
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            check_mstx_sum(db, rank, facts["mstx_sum"], run_dir)
            comm_time[rank] = check_mstx2commop(db, rank, facts["mstx2commop"])
            check_insight(db, path, rank, facts["insight"])
            db.close()
        # The slow rank comes last to every all-reduce of the job: its
        # operations wait least (rank 0's rerun ran alone: its older run counts).
        path = os.path.join(old[0], layout["database_with_rank"].format(rank=0))
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        comm_time[0] = check_mstx2commop(db, 0, facts["mstx2commop"])
        db.close()
        if os.environ.get("NPUPROF_TEST_SANITIZED"):
            print(f"under a sanitizer, which rank waits least is not checked: {comm_time}")
        else:
            check(min(comm_time, key=comm_time.get) == SLOW_RANK, f"communication time by rank: {comm_time}")

        single = find_runs(env_free, facts["discovery"])
        check(list(single) == [-1], f"a run without a rank: {dict(single)}")
        for run_dir in single.get(-1, []):
            path = os.path.join(run_dir, layout["database_without_rank"])
            check(os.path.exists(path), f"{path}")
            check(os.path.exists(os.path.join(run_dir, layout["profiler_info_without_rank"])), "profiler_info.json")
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            check_insight(db, path, -1, facts["insight"])
            steps = db.execute(facts["mstx_sum"]["step_query"]).fetchall()
            check([s[0] for s in steps] == [0, 1, 2], f"operator steps {steps}")
            db.close()
        if len(sys.argv) > 6:
            check_injected(sys.argv[4], sys.argv[5], sys.argv[6], tmp, facts)
    checks = "mstx_sum, mstx2commop and Insight's queries"
    print(f"{RANKS} ranks and a run without a rank: {checks}: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

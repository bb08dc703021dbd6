#!/usr/bin/python3
"""Times benchmark cases with onnx-mini (onnx-run) and onnxruntime (ort_bench.js)
in one sitting and prints the ratio table in markdown.

Every round runs each case with each runtime in turn (the order alternates
between rounds), at each thread count, quiet and (with --busy) contended; a run's figure is the median of its
timed iterations after warm-up, and the table shows the median over rounds.
The machine is shared and noisy: compare ratios from one sitting, not
figures from different sittings.

  tools/bench/compare.py CASES_DIR... [--rounds 5] [--iters 10] [--threads 1,2]
      [--onnx-run build/tools/onnx-run | --onnx-run LABEL=PATH ...]
      [--busy N] [--check] [--filter REGEX] [--node-path /tmp/ortnode/node_modules]

CASES_DIR: folders of cases in the backend-test layout (bench-cases and
bench-decoder write them). Several --onnx-run give one column each (e.g. a
previous build). --busy N measures every case quiet and again with N competing
busy processes (each a `yes > /dev/null` loop), in the same rounds, and adds
the slowdown columns. --check compares the outputs of the two runtimes once
per case before timing.

Both runtimes run with MALLOC_MMAP_THRESHOLD_=33554432 and
MALLOC_TRIM_THRESHOLD_=4294967296 (glibc keeps large freed blocks instead of
unmapping them after every run) unless the environment sets them.

A case folder may hold a bench.json (bench-decoder --quant writes them):
"bind": true times both runtimes with the outputs bound (a KV cache updated
in place: onnx-run --bind, ort_bench.js --bind); "weight_bytes_read" of a
"decode" step adds the floor: those bytes over the read bandwidth that
bench-bandwidth measures at each thread count in every round (median over
rounds), and each runtime's time over it; "cache_bytes_read" and
"cache_bytes_written" (the KV cache the step must move: its past read, its
present written) add a second floor, weights and cache bytes together over
the same read bandwidth (streaming stores write at about the read rate
here). Standard library only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "4294967296"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dirs", nargs="+", help="folders holding CASE/model.onnx + CASE/test_data_set_0")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=10, help="timed runs per measurement")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--onnx-run", action="append", default=[],
                   help="PATH or LABEL=PATH of onnx-run (repeatable; default build/tools/onnx-run)")
    p.add_argument("--node-path", default="/tmp/ortnode/node_modules",
                   help="node_modules with onnxruntime-node and onnx-proto")
    p.add_argument("--no-ort", action="store_true", help="time onnx-mini only")
    p.add_argument("--busy", type=int, default=0, help="also measure with N competing busy processes")
    p.add_argument("--check", action="store_true", help="compare the runtimes' outputs first")
    p.add_argument("--filter", default="", help="regex on case names")
    p.add_argument("--timeout", type=float, default=600, help="seconds per measurement")
    p.add_argument("--bandwidth", default="",
                   help="bench-bandwidth to measure the floors with (default: beside the first onnx-run, else build/tools/)")
    p.add_argument("--verbose", action="store_true", help="print every measurement on stderr")
    return p.parse_args()


def find_cases(dirs, pattern):
    cases = []
    for d in dirs:
        for name in sorted(os.listdir(d)):
            c = os.path.join(d, name)
            if os.path.isfile(os.path.join(c, "model.onnx")) and re.search(pattern, name):
                cases.append(c)
    return cases


def bench_info(case):
    """CASE/bench.json, or {}."""
    try:
        with open(os.path.join(case, "bench.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def run_json(cmd, env, timeout):
    """Runs a command printing one JSON object last; returns it, or {'error': ...}."""
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        return {"error": (r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}").splitlines()[-1]}
    return json.loads(lines[-1])


class Runner:
    def __init__(self, args):
        self.args = args
        self.env = dict(MALLOC_ENV, **os.environ)
        self.node_env = dict(self.env, NODE_PATH=args.node_path)
        self.ort_script = os.path.join(HERE, "ort_bench.js")
        self.minis = []
        for spec in args.onnx_run or [os.path.join(ROOT, "build", "tools", "onnx-run")]:
            label, _, path = spec.rpartition("=")
            self.minis.append((label or "onnx-mini", path))
        # bench-bandwidth beside the first onnx-run, else the project's build.
        beside = os.path.join(os.path.dirname(self.minis[0][1]), "bench-bandwidth")
        built = os.path.join(ROOT, "build", "tools", "bench-bandwidth")
        self.bandwidth = args.bandwidth or (beside if os.path.exists(beside) else built)

    def mini(self, path, case, threads, output_dir=None):
        cmd = [path, os.path.join(case, "model.onnx"), "--input-dir", os.path.join(case, "test_data_set_0"),
               "--threads", str(threads), "--json"]
        # The warm-up matches ort_bench.js's three untimed runs.
        cmd += ["--output-dir", output_dir] if output_dir else ["--repeat", str(self.args.iters), "--warmup", "3"]
        if bench_info(case).get("bind") and not output_dir:
            cmd.append("--bind")
        return run_json(cmd, self.env, self.args.timeout)

    def ort(self, case, threads, check_dir=None):
        cmd = ["node", self.ort_script, case, str(self.args.iters), "--threads", str(threads)]
        if check_dir:
            cmd = ["node", self.ort_script, case, "1", "--threads", str(threads), "--check", check_dir]
        elif bench_info(case).get("bind"):
            cmd.append("--bind")
        return run_json(cmd, self.node_env, self.args.timeout)

    def read_gbs(self, threads):
        """{threads: GB/s} from bench-bandwidth, or {} when it cannot run."""
        if not os.path.exists(self.bandwidth):
            print(f"note: {self.bandwidth} not found: no read bandwidth, no floors", file=sys.stderr)
            return {}
        r = run_json([self.bandwidth, "--threads", ",".join(str(t) for t in threads)], self.env, self.args.timeout)
        return {int(t): v for t, v in r.get("read_gbs", {}).items()}


class Busy:
    """N competing busy processes (`yes` writing to /dev/null), stopped by pid."""

    def __init__(self, n):
        self.n, self.procs = n, []

    def __enter__(self):
        for _ in range(self.n):
            self.procs.append(subprocess.Popen(["yes"], stdout=subprocess.DEVNULL))
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait()


def fmt(v):
    if v is None:
        return "—"
    return f"{v:.3g}" if v < 10 else f"{v:.0f}" if v >= 100 else f"{v:.1f}"


def main():
    args = parse_args()
    runner = Runner(args)
    cases = find_cases(args.dirs, args.filter)
    if not cases:
        sys.exit("no cases found")
    threads = [int(t) for t in args.threads.split(",")]
    columns = [label for label, _ in runner.minis] + ([] if args.no_ort else ["onnxruntime"])
    loads = [0] + ([args.busy] if args.busy else [])

    checks = {}
    if args.check and not args.no_ort:
        for case in cases:
            with tempfile.TemporaryDirectory() as out:
                r = runner.mini(runner.minis[0][1], case, threads[-1], output_dir=out)
                checks[case] = r if "error" in r else runner.ort(case, threads[-1], check_dir=out)
            if args.verbose:
                print(f"check {os.path.basename(case)}: {json.dumps(checks[case])}", file=sys.stderr)

    # times[(case, threads, load, column)] = [median of each round]
    times, errors = {}, {}
    infos = {case: bench_info(case) for case in cases}
    floors_wanted = any(i.get("step") == "decode" and i.get("weight_bytes_read") for i in infos.values())
    gbs = {}  # threads -> [GB/s of each round]
    for rnd in range(args.rounds):
        if floors_wanted:
            for t, v in runner.read_gbs(threads).items():
                gbs.setdefault(t, []).append(v)
        # A case's thread counts one after the other (in turn reversed), so
        # that its 1- and 2-thread times share a moment of the machine.
        for case in cases:
            for t in (threads if rnd % 2 == 0 else threads[::-1]):
                for load in (loads if rnd % 2 == 0 else loads[::-1]):
                    with Busy(load):
                        order = columns if rnd % 2 == 0 else columns[::-1]
                        for col in order:
                            if col == "onnxruntime":
                                r = runner.ort(case, t)
                            else:
                                r = runner.mini(dict(runner.minis)[col], case, t)
                            key = (case, t, load, col)
                            if "error" in r:
                                errors[key] = r["error"]
                            else:
                                times.setdefault(key, []).append(r["median_ms"])
                            if args.verbose:
                                print(f"round {rnd} busy {load} {os.path.basename(case)} t{t} {col}: "
                                      f"{r.get('median_ms', r.get('error'))}", file=sys.stderr)

    def med(case, t, load, col):
        v = times.get((case, t, load, col))
        return statistics.median(v) if v else None

    print(f"Medians in ms over {args.rounds} rounds of {args.iters} timed runs "
          f"(each after warm-up), runtimes alternating, both with "
          + " ".join(f"{k}={runner.env[k]}" for k in MALLOC_ENV) + ".")
    bandwidth = {t: statistics.median(v) for t, v in gbs.items()}
    if floors_wanted:
        print("Read bandwidth (bench-bandwidth, 256 MiB read-only sum, median over rounds): " + (", ".join(
            f"{t} thread{'s' if t > 1 else ''} {bandwidth[t]:.1f} GB/s" for t in threads if t in bandwidth)
            or "not measured (no bench-bandwidth at " + runner.bandwidth + ")") + ".")
    if args.check and checks:
        print("\nOutputs, onnxruntime against onnx-mini: " + "; ".join(
            f"{os.path.basename(c)} " + (r["error"] if "error" in r else
                                          f"max rel err {r['max_rel_err']:.1e}, {r['mismatches']} mismatches")
            for c, r in checks.items()))
    print()
    ref = columns[0]
    head = ["case", "threads"]
    for load in loads:
        tag = f" (busy {load})" if load else ""
        head += [f"{c}{tag}" for c in columns]
        if "onnxruntime" in columns:
            head.append(f"onnxruntime / {ref}{tag}")
    if args.busy:
        head += [f"{c} busy/quiet" for c in columns]
    if floors_wanted:
        head += ["MB read", "floor"] + [f"{c} / floor" for c in columns]
        head += ["cache MB", "floor with cache"] + [f"{c} / floor with cache" for c in columns]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for case in cases:
        for t in threads:
            row = [os.path.basename(case), str(t)]
            for load in loads:
                for c in columns:
                    v = med(case, t, load, c)
                    row.append("error" if v is None and (case, t, load, c) in errors else fmt(v))
                if "onnxruntime" in columns:
                    a, b = med(case, t, load, ref), med(case, t, load, "onnxruntime")
                    row.append(f"{b / a:.2f}" if a and b else "—")
            if args.busy:
                for c in columns:
                    q, b = med(case, t, 0, c), med(case, t, args.busy, c)
                    row.append(f"{b / q:.2f}" if q and b else "—")
            if floors_wanted:
                info = infos[case]
                read = info.get("weight_bytes_read") if info.get("step") == "decode" else None
                floor = read / (bandwidth[t] * 1e6) if read and bandwidth.get(t) else None
                row += [f"{read / 1e6:.1f}" if read else "—", fmt(floor)]
                for c in columns:
                    v = med(case, t, 0, c)
                    row.append(f"{v / floor:.2f}" if v and floor else "—")
                cache = info.get("cache_bytes_read", 0) + info.get("cache_bytes_written", 0) if read else 0
                floor_c = (read + cache) / (bandwidth[t] * 1e6) if cache and bandwidth.get(t) else None
                row += [f"{cache / 1e6:.1f}" if cache else "—", fmt(floor_c)]
                for c in columns:
                    v = med(case, t, 0, c)
                    row.append(f"{v / floor_c:.2f}" if v and floor_c else "—")
            print("| " + " | ".join(row) + " |")
    for key, e in sorted(errors.items()):
        print(f"\nerror: {os.path.basename(key[0])} threads {key[1]} busy {key[2]} {key[3]}: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()

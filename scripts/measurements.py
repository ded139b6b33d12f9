#!/usr/bin/env python3
"""Render a benchmark's JSON as a Markdown table for docs/measurements.md.

Reads one JSON file (or stdin with "-") written by one of:
  tracepipe bench --json               the replayed mix, the end-to-end and perf tables
  tracepipe bench-peers --json         tracepipe beside LTTng-UST (and the kernel), the targets
  tracepipe_microbench --benchmark_format=json   Google Benchmark: one row per case

and prints the line docs/measurements.md puts above each table (host, load,
command), then the table(s). Host and load come from the JSON when it has
them (Google Benchmark's context), else from --host / --load, else from this
machine (lscpu, /proc/loadavg), marked "at rendering". The figures are
printed as the JSON holds them, rounded to 3 significant digits.

  scripts/measurements.py bench.json --command 'tracepipe bench --json'
  scripts/measurements.py emit.json --filter '^emit/paired'
"""

import argparse
import json
import os
import re
import subprocess
import sys


def fmt(x, digits=3):
    """A figure to `digits` significant digits; '' for None."""
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    if x == 0:
        return "0"
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        out.append("| " + " | ".join("" if c is None else str(c).replace("|", "\\|") for c in r) + " |")
    return "\n".join(out)


def here_host():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        m = re.search(r"^Model name:\s*(.+)$", out, re.M)
        model = m.group(1).strip() if m else "unknown CPU"
    except (OSError, subprocess.CalledProcessError):
        model = "unknown CPU"
    return f"{model}, {os.cpu_count()} CPUs (at rendering)"


def here_load():
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0] + " (at rendering)"
    except OSError:
        return "unknown"


# -- tracepipe bench --------------------------------------------------------------------------


def cost_cell(c, key="ns_per_event"):
    """'ns ±ci', or 'n.s. (measured ±ci)' when the JSON marks it not significant."""
    ns = c.get(key)
    ci = c.get("ci95_ns")
    if ns is None:
        return f"n.s. ({fmt(c.get('ns_per_event_measured'))} ±{fmt(ci)}; {c.get('why', '')})"
    mark = "" if c.get("significant", True) else " *"
    return f"{fmt(ns)} ±{fmt(ci)}{mark}"


def render_bench(d):
    parts = []
    mix = d.get("mix")
    if mix and mix.get("cases"):
        stagings = list(dict.fromkeys(c["staging"] for c in mix["cases"]))
        cases = list(dict.fromkeys(c["case"] for c in mix["cases"]))
        by = {(c["case"], c["staging"]): c for c in mix["cases"]}
        rows = [["off", "base: " + fmt(mix.get("base_ns_per_event")) + " ns/event"] + [""] * (len(stagings) - 1) + [""]]
        for k in cases:
            row = [k] + [cost_cell(by[(k, s)]) if (k, s) in by else "" for s in stagings]
            acc = [by[(k, s)].get("accept_pct") for s in stagings if (k, s) in by]
            row.append(fmt(acc[0]) if acc else "")
            rows.append(row)
        head = ["case"] + [f"staging {s} (ns/event)" for s in stagings] + ["pass %"]
        src = os.path.basename(str(mix.get("source", "")))
        parts.append(f"Replayed mix ({src}; {mix.get('threads')} threads, {mix.get('rounds')} rounds of "
                     f"{mix.get('block_events')} events per thread per block; median over rounds, ± its 95% interval; "
                     f"* not significant):\n\n" + table(head, rows))
        dvc = mix.get("discard_vs_commit") or []
        if dvc:
            parts.append("Discarding against committing (reject / all): " +
                         ", ".join(f"staging {x['staging']} {fmt(x['ratio'], 2)}" for x in dvc) + ".")
    cases = d.get("cases") or []
    if cases:
        rows = [[c["case"], c["staging"] if c.get("events") else "-", c.get("runs"), fmt(c.get("median_s")),
                 fmt(c.get("stddev_pct"), 2), c.get("events"), fmt(c.get("accept_pct")),
                 cost_cell(c) if c.get("events") else "", fmt(c.get("ratio_to_off"))] for c in cases]
        parts.append("End-to-end hackbench (median of the runs; ns/event paired with off's run of the same repetition):\n\n" +
                     table(["case", "staging", "runs", "median s", "stddev %", "events", "pass %", "ns/event", "x off"], rows))
    ow = d.get("overwrite_series") or {}
    if ow.get("cases"):
        rows = [[c["case"], c.get("runs"), fmt(c.get("median_s")), cost_cell(c) if c["case"] != "base" else "",
                 c.get("written"), c.get("lost"), c.get("overrun"), c.get("read")] for c in ow["cases"]]
        parts.append(f"Perf overwrite series ({ow.get('events')} events, system call {'on' if ow.get('syscall') else 'off'}):\n\n" +
                     table(["case", "runs", "median s", "ns/event over base", "written", "lost", "overrun", "read"], rows))
    return parts


# -- tracepipe bench-peers --------------------------------------------------------------------


def render_peers(d):
    parts = []
    micro = d.get("micro") or {}
    cells = micro.get("cells") or []
    if cells:
        sides = []
        for c in cells:
            for s in c["sides"]:
                if s["side"] not in sides:
                    sides.append(s["side"])
        rows = []
        for c in cells:
            by = {s["side"]: s for s in c["sides"]}
            row = [c["case"], c["threads"]]
            for name in sides:
                s = by.get(name)
                row.append(f"{fmt(s['median'])} [{fmt(s['min'])} {fmt(s['max'])}]" if s and not s.get("error") else
                           (s.get("error") if s else ""))
            tp, peer = by.get("tracepipe"), next((by[n] for n in sides if n != "tracepipe" and n in by), None)
            row.append(fmt(peer["median"] / tp["median"], 2) if tp and peer and tp["median"] else "")
            rows.append(row)
        head = ["case", "threads"] + [f"{s} ns/event, median [min max]" for s in sides] + ["peer/tracepipe"]
        parts.append(f"Event loop ({micro.get('events')} events per thread per round, {micro.get('rounds')} rounds, "
                     f"{d.get('timing')} time):\n\n" + table(head, rows))
    kl = d.get("kernel_loop")
    if kl and kl.get("rows"):
        rows = [[r["row"], r["threads"], fmt(r["median"]), fmt(r["ns_per_event"]), r["recorded"]] for r in kl["rows"]]
        parts.append(f"The kernel's event loop ({kl.get('event')}; reject/commit ratio {fmt(kl.get('reject_ratio'), 2)}):\n\n" +
                     table(["row", "threads", "median ns", "ns/event over ignored", "recorded"], rows))
    k = d.get("kernel")
    if k and k.get("rows"):
        rows = [[r["case"], fmt(r["tracepipe"]["ns_per_event"]), fmt(r["kernel"]["ns_per_event"])] for r in k["rows"]]
        parts.append(f"Hackbench, tracepipe against the kernel (reject/commit: tracepipe "
                     f"{fmt(k.get('tracepipe_reject_ratio'), 2)}, kernel {fmt(k.get('kernel_reject_ratio'), 2)}):\n\n" +
                     table(["case", "tracepipe ns/event", "kernel ns/event"], rows))
    if d.get("targets"):
        parts.append("Targets:\n\n" + table(["target", "value", "verdict"],
                                            [[t["what"], t["value"], t["verdict"]] for t in d["targets"]]))
    for s in d.get("skipped") or []:
        parts.append(f"Skipped: {s}")
    return parts


# -- Google Benchmark -------------------------------------------------------------------------


def counter(name, v):
    """A counter as the console shows it: an inverted rate (`kIsRate | kInvert`) is seconds per
    item in the JSON, so the benches' `ns_per_*` counters are printed in ns; others with a k/M/G
    prefix."""
    if "ns_per" in name and 0 < abs(v) < 1e-3:
        return fmt(v * 1e9)
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return fmt(v / div) + unit
    return fmt(v)



def render_gbench(d, pattern):
    rx = re.compile(pattern) if pattern else None
    benches = [b for b in d.get("benchmarks", []) if not rx or rx.search(b.get("run_name", b["name"]))]
    aggregated = any(b.get("run_type") == "aggregate" for b in benches)
    rows = {}
    order = []
    for b in benches:
        name = b.get("run_name", b["name"])
        if aggregated:
            if b.get("run_type") != "aggregate" or b.get("aggregate_name") not in ("median", "cv"):
                continue
        elif b.get("run_type") == "aggregate":
            continue
        if name not in rows:
            rows[name] = {}
            order.append(name)
        rows[name][b.get("aggregate_name", "value")] = b
    out = []
    for name in order:
        r = rows[name]
        b = r.get("median") or r.get("value")
        if not b:
            continue
        cv = r.get("cv")
        unit = b.get("time_unit", "ns")
        counters = {k: v for k, v in b.items() if isinstance(v, (int, float)) and k not in (
            "family_index", "per_family_instance_index", "repetitions", "repetition_index", "threads",
            "iterations", "real_time", "cpu_time")}
        out.append([name, f"{fmt(b['real_time'])} {unit}", f"{fmt(b['cpu_time'])} {unit}",
                    f"{fmt(cv['cpu_time'] * 100, 2)}%" if cv else "",
                    ", ".join(f"{k} {counter(k, v)}" for k, v in counters.items())])
    what = "median of the repetitions" if aggregated else "one run"
    return [f"Google Benchmark, {what} (cv: the repetitions' coefficient of variation of CPU time):\n\n" +
            table(["case", "time", "CPU", "cv", "counters"], out)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="the JSON file, or - for stdin")
    ap.add_argument("--host", help="the host the JSON was measured on (lscpu's Model name, CPUs)")
    ap.add_argument("--load", help="the load average while it ran (uptime)")
    ap.add_argument("--command", help="the command that wrote the JSON")
    ap.add_argument("--filter", help="Google Benchmark: only the cases whose name matches this regex")
    a = ap.parse_args()

    try:
        with (sys.stdin if a.json == "-" else open(a.json)) as f:
            d = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"measurements.py: {a.json}: {e}")

    ctx = d.get("context") if isinstance(d, dict) else None
    host, load, command = a.host, a.load, a.command
    if ctx:
        host = host or f"{ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz"
        if not load and ctx.get("load_avg"):
            load = f"{fmt(ctx['load_avg'][0], 2)} (1 min), {ctx.get('date', '')}"
        command = command or os.path.basename(ctx.get("executable", "tracepipe_microbench"))
    host = host or here_host()
    load = load or here_load()

    tool = d.get("tool") if isinstance(d, dict) else None
    if tool == "tracepipe bench":
        parts = render_bench(d)
        command = command or "tracepipe bench --json"
    elif tool == "tracepipe bench-peers":
        parts = render_peers(d)
        command = command or "tracepipe bench-peers --json"
    elif ctx is not None and "benchmarks" in d:
        parts = render_gbench(d, a.filter)
    else:
        sys.exit(f"measurements.py: {a.json}: not the JSON of tracepipe bench, bench-peers or Google Benchmark")

    print(f"Host: {host}. Load: {load}. Command: `{command}`.\n")
    print("\n\n".join(parts))


if __name__ == "__main__":
    main()

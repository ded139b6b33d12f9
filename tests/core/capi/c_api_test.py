#!/usr/bin/env python3
"""libtracepipe_c from Python through ctypes alone (no other package):
declare an event, set filters (a bad one: the kernel's caret), emit from
several threads (ctypes releases the GIL for each call), record a growing
trace.dat, and read it back with `trace-cmd report`; then record to an
unmodified `trace-cmd listen` and read the file it writes. CDLL is a
dlopen(): no GLIBC_TUNABLES is needed (the CTest sets it empty).

    c_api_test.py LIBTRACEPIPE_C.so WORKDIR
"""
import ctypes as C
import os
import shutil
import subprocess
import sys
import threading

lib_path, work = sys.argv[1], sys.argv[2]
if shutil.which("trace-cmd") is None:
    print("SKIP: trace-cmd is not installed")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
lib = C.CDLL(lib_path)

FIELD_INT, FIELD_CHARS, FIELD_STRING = 0, 1, 2
STRLEN = C.c_size_t(-1).value


class Field(C.Structure):
    _fields_ = [("name", C.c_char_p), ("kind", C.c_int), ("size", C.c_uint32), ("array_len", C.c_uint32),
                ("is_signed", C.c_int), ("type", C.c_char_p)]


class EventSpec(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("system", C.c_char_p), ("name", C.c_char_p),
                ("fields", C.POINTER(Field)), ("field_count", C.c_size_t), ("field_struct_size", C.c_size_t),
                ("print_fmt", C.c_char_p)]


class Value(C.Structure):
    _fields_ = [("num", C.c_uint64), ("data", C.c_void_p), ("len", C.c_size_t)]


class Tracepoint(C.Structure):
    _fields_ = [("state_", C.c_void_p)]


class RecorderOptions(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("output", C.c_char_p), ("collector", C.c_char_p),
                ("file_version", C.c_uint32), ("compression", C.c_char_p), ("flight_recorder", C.c_int),
                ("watermark_percent", C.c_uint32), ("flush_interval_ms", C.c_uint32),
                ("collector_timeout_ms", C.c_uint32)]


class EventStats(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("kept", C.c_uint64), ("discarded", C.c_uint64),
                ("lost", C.c_uint64), ("staged", C.c_uint64), ("direct", C.c_uint64)]


P = C.c_void_p
for name, res, args in [
    ("tracepipe_last_error", C.c_char_p, []),
    ("tracepipe_status_name", C.c_char_p, [C.c_int]),
    ("tracepipe_event_declare", C.c_int, [C.POINTER(EventSpec), C.POINTER(Tracepoint), C.POINTER(P)]),
    ("tracepipe_instance_create", C.c_int, [P, C.POINTER(P)]),
    ("tracepipe_instance_enable", C.c_int, [P, P, C.c_int]),
    ("tracepipe_instance_set_filter", C.c_int, [P, P, C.c_char_p]),
    ("tracepipe_trace_values", None, [P, C.POINTER(Value), C.c_size_t]),
    ("tracepipe_recorder_start", C.c_int, [P, C.POINTER(RecorderOptions), C.POINTER(P)]),
    ("tracepipe_recorder_stop", C.c_int, [P, P]),
    ("tracepipe_recorder_destroy", None, [P]),
    ("tracepipe_instance_event_stats", C.c_int, [P, P, C.POINTER(EventStats)]),
    ("tracepipe_instance_destroy", None, [P]),
]:
    f = getattr(lib, name)
    f.restype, f.argtypes = res, args


def check(status, what):
    if status != 0:
        raise SystemExit(f"{what}: {lib.tracepipe_status_name(status).decode()}: "
                         f"{lib.tracepipe_last_error().decode()}")


fields = (Field * 3)(Field(b"seq", FIELD_INT, 4, 0, 0, None), Field(b"worker", FIELD_CHARS, 0, 12, 0, None),
                     Field(b"msg", FIELD_STRING, 0, 0, 0, None))
spec = EventSpec(C.sizeof(EventSpec), b"py", b"work", fields, 3, C.sizeof(Field), None)
tp = Tracepoint()
ev = P()
check(lib.tracepipe_event_declare(C.byref(spec), C.byref(tp), C.byref(ev)), "declare")

inst = P()
check(lib.tracepipe_instance_create(None, C.byref(inst)), "instance")
assert tp.state_ is None
check(lib.tracepipe_instance_enable(inst, ev, 1), "enable")
assert tp.state_ is not None, "enabling publishes into the tracepoint's word"

# A bad filter: the kernel's message, the caret under the unknown field.
assert lib.tracepipe_instance_set_filter(inst, ev, b"seqq < 10") == 2  # TRACEPIPE_EFILTER
msg = lib.tracepipe_last_error().decode()
lines = msg.splitlines()
cmd = next(i for i, l in enumerate(lines) if "Command: " in l)
assert "Field not found" in msg, msg
assert lines[cmd + 1].index("^") == lines[cmd].index("<"), msg  # the kernel's place: the operator
check(lib.tracepipe_instance_set_filter(inst, ev, b'seq < 100 || worker == "w0"'), "filter")

out = os.path.join(work, "py.dat")
opts = RecorderOptions(C.sizeof(RecorderOptions), out.encode(), None, 0, None, 0, 0, 0, 0)
rec = P()
check(lib.tracepipe_recorder_start(inst, C.byref(opts), C.byref(rec)), "recorder")

N, THREADS = 500, 4


def writer(t):
    worker = f"w{t}".encode()
    for i in range(N):
        text = f"thread {t} item {i}".encode()
        vals = (Value * 3)(Value(i, None, 0), Value(0, C.cast(C.c_char_p(worker), C.c_void_p), STRLEN),
                           Value(0, C.cast(C.c_char_p(text), C.c_void_p), len(text)))
        lib.tracepipe_trace_values(ev, vals, 3)


threads = [threading.Thread(target=writer, args=(t,)) for t in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(lib.tracepipe_recorder_stop(rec, None), "stop")
lib.tracepipe_recorder_destroy(rec)

stats = EventStats(C.sizeof(EventStats))
check(lib.tracepipe_instance_event_stats(inst, ev, C.byref(stats)), "stats")
want = N + (THREADS - 1) * 100  # all of w0, the first 100 of the others
assert stats.kept == want and stats.discarded == THREADS * N - want, (stats.kept, stats.discarded)
lib.tracepipe_instance_destroy(inst)

report = subprocess.run(["trace-cmd", "report", out], capture_output=True, text=True, check=True).stdout
works = [l for l in report.splitlines() if " work: " in l]
assert len(works) == want, (len(works), want)
assert any("seq=499 worker=w0 msg=thread 0 item 499" in l for l in works), works[:3]
assert not any("worker=w1" in l and "seq=100 " in l for l in works)
print(f"c_api (python): {len(works)} records in trace-cmd report, as counted; filter caret ok")

# The recorder to a collector: an unmodified `trace-cmd listen` on a
# loopback port, as `trace-cmd record -N` sends the kernel's buffers.
import glob
import socket
import time

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
cdir = os.path.join(work, "collector")
os.makedirs(cdir, exist_ok=True)
listen = subprocess.Popen(["trace-cmd", "listen", "-p", str(port), "-d", cdir], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
try:
    lib.tracepipe_recorder_wait_ready.restype, lib.tracepipe_recorder_wait_ready.argtypes = C.c_int, [P, C.c_uint32]
    inst = P()
    check(lib.tracepipe_instance_create(None, C.byref(inst)), "instance")
    check(lib.tracepipe_instance_enable(inst, ev, 1), "enable")
    copts = RecorderOptions(C.sizeof(RecorderOptions), None, f"127.0.0.1:{port}".encode(), 7, None, 0, 0, 0, 0)
    rec = P()
    for attempt in range(50):  # until trace-cmd listen has bound its port
        check(lib.tracepipe_recorder_start(inst, C.byref(copts), C.byref(rec)), "recorder to collector")
        if lib.tracepipe_recorder_wait_ready(rec, 2000):
            break
        lib.tracepipe_recorder_destroy(rec)
        time.sleep(0.1)
    else:
        raise SystemExit("trace-cmd listen never took the connection")
    for i in range(200):
        text = f"net {i}".encode()
        vals = (Value * 3)(Value(i, None, 0), Value(0, C.cast(C.c_char_p(b"net"), C.c_void_p), STRLEN),
                           Value(0, C.cast(C.c_char_p(text), C.c_void_p), len(text)))
        lib.tracepipe_trace_values(ev, vals, 3)
    check(lib.tracepipe_recorder_stop(rec, None), "stop")
    lib.tracepipe_recorder_destroy(rec)
    lib.tracepipe_instance_destroy(inst)
    lines = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:  # the collector joins its file once the session ends
        for f in glob.glob(os.path.join(cdir, "*.dat")):
            r = subprocess.run(["trace-cmd", "report", f], capture_output=True, text=True)
            lines = [l for l in r.stdout.splitlines() if " work: " in l]
            if len(lines) >= 200:
                break
        if len(lines) >= 200:
            break
        time.sleep(0.2)
    assert len(lines) == 200, f"collector's file has {len(lines)} records of 200"  # no filter here
    assert any("seq=99 worker=net msg=net 99" in l for l in lines), lines[-1:]
    print(f"c_api (python): trace-cmd listen wrote {len(lines)} records, as sent")
finally:
    listen.terminate()
    listen.wait(timeout=10)

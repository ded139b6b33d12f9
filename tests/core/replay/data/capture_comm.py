#!/usr/bin/env python3
"""Captures the COMM oracle: how the running kernel filters on COMM
(current->comm) while tasks rename themselves and exec (run as root).

  capture_comm.py OUTDIR            both captures: OUTDIR/comm_rename, OUTDIR/comm_exec

For each workload mode (comm_workload.c: rename, exec) one tracefs instance
records the events unfiltered (all.dat) and one instance per filter of
FILTERS records the same events with that filter set on every event
(fNN.dat). All instances follow the same process tree (set_event_pid with
options/event-fork), so each event occurrence reaches all of them with the
same payload, and the records of fNN.dat are exactly the records of all.dat
the kernel's filter kept. filters.tsv lists id, expression, records in
all.dat and in fNN.dat; kernel.txt names the kernel build (uname -r, -v).

The files are trace.dat version 7, zstd-compressed, built by trace-cmd
restore from the raw sub-buffers (per_cpu/cpuN/trace_pipe_raw) with only the
recorded events' formats (and the ftrace ones trace-cmd needs), an empty printk_formats, no kallsyms, and the
kernel's saved_cmdlines at the end of the run. The script fails if an
instance lost events. Every instance it made is removed, whatever happens;
nothing else in tracefs is touched.
"""
import errno, os, shutil, signal, subprocess, sys, tempfile, time

T = '/sys/kernel/tracing'
HERE = os.path.dirname(os.path.abspath(__file__))
EVENTS = [
    'sched:sched_switch', 'sched:sched_wakeup', 'sched:sched_waking', 'sched:sched_wakeup_new',
    'sched:sched_process_fork', 'sched:sched_process_exec', 'sched:sched_process_exit',
    'task:task_rename', 'task:task_newtask', 'syscalls:sys_enter_getppid',
]
# COMM is the generic field (no event here has a field of that name):
# ==, != and ~ in each of the kernel's match modes, globs with classes.
FILTERS = [
    'COMM == "tp-alpha"',
    'COMM != "tp-alpha"',
    'COMM ~ "tp-b*"',
    'COMM ~ "*012345"',
    'COMM ~ "tp-[ab]*"',
    'COMM ~ "tp-?[!a-f]*"',
    'COMM ~ "*chil*"',
    'COMM ~ "!tp-*"',
    'COMM == "tp_comm_work"',
    'COMM ~ "tp-execd-0123[0-9][0-9]"',
    'COMM ~ "[t]p_comm_w?rk"',
    'COMM != "tp-execd-012345"',
    'COMM ~ "tp-[d-g]*a"',
    'COMM ~ "*fexec*"',
]
BUF_KB = 1024


def wr(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data.encode())
    finally:
        os.close(fd)


def make_instance(name):
    p = f'{T}/instances/{name}'
    if os.path.isdir(p):
        remove_instance(name)
    os.mkdir(p)
    wr(f'{p}/tracing_on', '0')
    wr(f'{p}/buffer_size_kb', str(BUF_KB))
    wr(f'{p}/options/event-fork', '1')
    return p


def remove_instance(name):
    p = f'{T}/instances/{name}'
    if not os.path.isdir(p):
        return
    for f, v in (('tracing_on', '0'), ('events/enable', '0'), ('set_event_pid', '')):
        try:
            wr(f'{p}/{f}', v)
        except OSError:
            pass
    for _ in range(100):
        try:
            os.rmdir(p)
            return
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise
            time.sleep(0.1)
    raise RuntimeError(f'cannot remove instance {name}')


def event_dir(inst, ev):
    s, n = ev.split(':')
    return f'{inst}/events/{s}/{n}'


def per_cpu_stats(inst):
    total = {'entries': 0, 'lost': 0}
    for c in os.listdir(f'{inst}/per_cpu'):
        for line in open(f'{inst}/per_cpu/{c}/stats'):
            k, _, v = line.partition(':')
            k = k.strip()
            try:
                v = int(v)
            except ValueError:
                continue
            if k == 'entries':
                total['entries'] += v
            elif k in ('overrun', 'commit overrun', 'dropped events'):
                total['lost'] += v
    return total


def drain(inst, prefix):
    files = []
    cpus = sorted(int(d[3:]) for d in os.listdir(f'{inst}/per_cpu') if d.startswith('cpu'))
    for c in cpus:
        fd = os.open(f'{inst}/per_cpu/cpu{c}/trace_pipe_raw', os.O_RDONLY | os.O_NONBLOCK)
        name = f'{prefix}{c}'
        with open(name, 'wb') as out:
            while True:
                try:
                    b = os.read(fd, 4096)
                except OSError as e:
                    if e.errno == errno.EAGAIN:
                        break
                    raise
                if not b:
                    break
                out.write(b + b'\0' * (-len(b) % 4096))
        os.close(fd)
        files.append(name)
    return files


def header_dir(tmp):
    d = f'{tmp}/tracing'
    os.makedirs(f'{d}/events')
    for h in ('header_page', 'header_event'):
        shutil.copy(f'{T}/events/{h}', f'{d}/events/{h}')
    for n in os.listdir(f'{T}/events/ftrace'):  # trace-cmd restore needs them
        if os.path.isfile(f'{T}/events/ftrace/{n}/format'):
            os.makedirs(f'{d}/events/ftrace/{n}')
            shutil.copy(f'{T}/events/ftrace/{n}/format', f'{d}/events/ftrace/{n}/format')
    for ev in EVENTS:
        s, n = ev.split(':')
        os.makedirs(f'{d}/events/{s}/{n}')
        shutil.copy(f'{T}/events/{s}/{n}/format', f'{d}/events/{s}/{n}/format')
    open(f'{d}/printk_formats', 'w').close()
    shutil.copy(f'{T}/saved_cmdlines', f'{d}/saved_cmdlines')
    return d


def build_dat(rawfiles, out, tmp, fake):
    q = dict(check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hdr, mid = f'{tmp}/hdr.dat', f'{tmp}/mid.dat'
    subprocess.run(['trace-cmd', 'restore', '-c', '-t', fake, '-k', '/dev/null', '-o', hdr], **q)
    subprocess.run(['trace-cmd', 'restore', '-i', hdr, '-o', mid] + rawfiles, **q)
    subprocess.run(['trace-cmd', 'convert', '-i', mid, '--file-version', '7', '--compression', 'zstd',
                    '-o', out], **q)
    os.unlink(hdr)
    os.unlink(mid)


def start_stopped(cmd):
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGSTOP)
        try:
            os.execv(cmd[0], cmd)
        finally:
            os._exit(127)
    _, st = os.waitpid(pid, os.WUNTRACED)
    assert os.WIFSTOPPED(st)
    return pid


def capture(mode, outdir, bindir, tmp):
    os.makedirs(outdir, exist_ok=True)
    names = ['tp_comm_all'] + [f'tp_comm_f{i + 1:02d}' for i in range(len(FILTERS))]
    insts = []
    rows = []
    try:
        for n in names:
            insts.append(make_instance(n))
        for inst, expr in zip(insts[1:], FILTERS):
            for ev in EVENTS:
                wr(f'{event_dir(inst, ev)}/filter', expr)
        pid = start_stopped([f'{bindir}/tp_comm_work', mode])
        for inst in insts:
            wr(f'{inst}/set_event_pid', str(pid))
            wr(f'{inst}/trace', '')
            wr(f'{inst}/tracing_on', '1')
        for inst in insts:
            for ev in EVENTS:
                wr(f'{event_dir(inst, ev)}/enable', '1')
        os.kill(pid, signal.SIGCONT)
        _, st = os.waitpid(pid, 0)
        if not os.WIFEXITED(st) or os.WEXITSTATUS(st) != 0:
            raise RuntimeError(f'workload {mode} failed: status {st}')
        time.sleep(0.3)
        for inst in insts:
            wr(f'{inst}/tracing_on', '0')
        for inst in insts:
            for ev in EVENTS:
                wr(f'{event_dir(inst, ev)}/enable', '0')
        stats = [per_cpu_stats(i) for i in insts]
        if any(s['lost'] for s in stats):
            raise RuntimeError(f'{mode}: events were lost: {stats}')
        fake = header_dir(f'{tmp}/{mode}')
        for k, inst in enumerate(insts):
            out = f'{outdir}/all.dat' if k == 0 else f'{outdir}/f{k:02d}.dat'
            build_dat(drain(inst, f'{tmp}/{mode}/raw{k}.cpu'), out, tmp, fake)
        for k, expr in enumerate(FILTERS, start=1):
            rows.append(f'f{k:02d}\t{expr}\t{stats[0]["entries"]}\t{stats[k]["entries"]}')
    finally:
        for n in names:
            remove_instance(n)
    with open(f'{outdir}/filters.tsv', 'w') as f:
        f.write('id\texpression\tn_all\tn_kept\n')
        f.write(''.join(r + '\n' for r in rows))
    uname = os.uname()
    with open(f'{outdir}/kernel.txt', 'w') as f:
        f.write(f'{uname.release}\n{uname.version}\n')
    print(f'{mode}: {stats[0]["entries"]} records; kept per filter: ' +
          ' '.join(str(s['entries']) for s in stats[1:]))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix='tp_comm_')
    try:
        bindir = f'{tmp}/bin'
        os.makedirs(bindir)
        subprocess.run(['cc', '-O1', '-pthread', '-o', f'{bindir}/tp_comm_work', f'{HERE}/comm_workload.c'],
                       check=True)
        for copy in ('tp-execd-0123456789', 'tp-fexecd'):
            shutil.copy(f'{bindir}/tp_comm_work', f'{bindir}/{copy}')
        for mode in ('rename', 'exec'):
            capture(mode, f'{out}/comm_{mode}', bindir, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()

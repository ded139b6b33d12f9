#!/usr/bin/env python3
"""Asks the running kernel how it parses filter expressions (run as root).

  probe_kernel.py CORPUS.tsv > kernel_verdicts.tsv

CORPUS.tsv: "system:event<TAB>expression" lines; the expression uses \\n, \\t,
\\v, \\\\ and \\xHH escapes; '#' lines are comments. Each expression is written
byte-exact to events/SYS/EV/filter of a scratch instance (tp_filters_probe)
whose error_log is cleared first. Output columns: event, expression (escaped
as in the input), accepted (1/0), errno name, error text, caret column.
The instance is removed at the end. Kernels that ignore a trailing operator
(TrailingOperator::ignore) cannot compile a trailing '&&' after a top-level
'||' and WARN in dmesg: keep those out there.
"""
import errno, os, re, sys

T = '/sys/kernel/tracing'
I = f'{T}/instances/tp_filters_probe'


def unescape(s):
    out, i = bytearray(), 0
    while i < len(s):
        c = s[i]
        if c == '\\' and i + 1 < len(s):
            n = s[i + 1]
            if n == 'x':
                out.append(int(s[i + 2:i + 4], 16)); i += 4; continue
            out += {'n': b'\n', 't': b'\t', 'v': b'\v', '\\': b'\\'}.get(n, ('\\' + n).encode())
            i += 2; continue
        out += c.encode(); i += 1
    return bytes(out)


def main():
    os.makedirs(I, exist_ok=True)
    print('event\texpression\taccepted\terrno\terror\tcaret')
    try:
        for line in open(sys.argv[1], encoding='utf-8'):
            line = line.rstrip('\n')
            if not line or line.startswith('#'):
                continue
            ev, expr = line.split('\t', 1)
            s, n = ev.split(':')
            fp = f'{I}/events/{s}/{n}/filter'
            open(f'{I}/error_log', 'w').write('')
            err = 0
            fd = os.open(fp, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, unescape(expr))
            except OSError as e:
                err = e.errno
            finally:
                os.close(fd)
            log = open(f'{I}/error_log', 'rb').read().decode('latin-1')
            m = re.search(r'parse error: error: (.*)', log)
            text = m.group(1) if m else ''
            caret = ''
            lines = log.split('\n')
            for i, l in enumerate(lines):
                if l.startswith('  Command: ') and i + 1 < len(lines) and '^' in lines[i + 1]:
                    caret = str(lines[i + 1].index('^') - len('  Command: '))
            print('\t'.join([ev, expr, '0' if err else '1', errno.errorcode.get(err, str(err)) if err else '',
                             text, caret]))
            with open(fp, 'w') as f:
                f.write('0')
    finally:
        open(f'{I}/error_log', 'w').write('')
        os.rmdir(I)


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Markdown tables (median (min-max) over runs) for docs/benchmarks.md from aobj-bench JSON."""
import json, sys, statistics, glob
from collections import defaultdict, OrderedDict

def load(pattern):
    res = OrderedDict(); rat = OrderedDict()
    for f in sorted(glob.glob(pattern)):
        d = json.load(open(f))
        for c in d['results']:
            if c['error'] or c['ops'] == 0: continue
            k = (c['section'], c['system'], c['op'], c['size'], c['in_flight'])
            res.setdefault(k, []).append(c)
        for r in d['ratios']:
            k = (r['section'], r['system'], r['versus'], r['metric'], r['op'], r['size'], r['in_flight'])
            rat.setdefault(k, []).append(r['value'])
    return res, rat

def mm(v, fmt):
    if not v: return '-'
    m = statistics.median(v)
    if len(v) == 1: return fmt % m
    return f"{fmt % m} ({fmt % min(v)}-{fmt % max(v)})"

def size_name(s):
    return f"{s >> 20} MiB" if s >= (1 << 20) else f"{s >> 10} KiB"

def table(pattern, section='sweep', cols=('gbps','p50','cli','srv'), filt=None):
    res, _ = load(pattern)
    hdr = {'gbps':'GB/s','ops':'ops/s','p50':'p50 us','p99':'p99 us','cli':'client CPU s/GB','srv':'server CPU s/GB'}
    print('| system | op | size | in flight | ' + ' | '.join(hdr[c] for c in cols) + ' |')
    print('|---|---|---|---|' + '---|' * len(cols))
    for k, cs in res.items():
        sec, sysn, op, size, inf = k
        if sec != section or (filt and not filt(sysn)): continue
        vals = []
        for c in cols:
            if c == 'gbps': vals.append(mm([x['gbps'] for x in cs], '%.2f'))
            if c == 'ops': vals.append(mm([x['ops_per_s'] for x in cs], '%.0f'))
            if c == 'p50': vals.append(mm([x['latency_us']['p50'] for x in cs], '%.0f'))
            if c == 'p99': vals.append(mm([x['latency_us']['p99'] for x in cs], '%.0f'))
            if c == 'cli': vals.append(mm([x['client_cpu_s_per_gb'] for x in cs if x['client_cpu_s_per_gb'] is not None and x['client_cpu_s_per_gb'] >= 0], '%.3f'))
            if c == 'srv': vals.append(mm([x['server_cpu_s_per_gb'] for x in cs if x['server_cpu_s_per_gb'] is not None and x['server_cpu_s_per_gb'] >= 0], '%.3f'))
        print(f"| {sysn} | {op} | {size_name(size)} | {inf} | " + ' | '.join(vals) + ' |')

def ratios(pattern, section='sweep'):
    _, rat = load(pattern)
    for k, v in rat.items():
        sec, sysn, vs, metric, op, size, inf = k
        if sec != section or (sec == 'small' and vs == 'ucx'): continue
        print(f"- {sysn} {op} {size_name(size)} x{inf} {metric} vs {vs}: {mm(v, '%.2f')}x")

if __name__ == '__main__':
    d = sys.argv[1]
    for name, sec, cols in [('r1', 'sweep', ('gbps','p50','cli','srv')), ('r2', 'small', ('ops','p50','p99','cli','srv')),
                            ('r3', 'sweep', ('gbps','p50','cli','srv')), ('r4', 'sweep', ('gbps','p50','srv')),
                            ('r5', 'sweep', ('gbps','p50','p99','cli')), ('r6', 'sweep', ('gbps','p50','cli','srv'))]:
        print(f"\n### {name}\n")
        table(f"{d}/{name}*.json", sec, cols)
        print()
        ratios(f"{d}/{name}*.json", sec)

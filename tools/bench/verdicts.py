#!/usr/bin/env python3
"""Issue 19's benchmark targets, judged from aobj-bench JSON runs (scripts/bench-targets.sh).

Usage: verdicts.py RUN.json [RUN.json ...]

Each target is a ratio taken inside one run (this machine's speed drifts; a ratio between two
runs would measure the drift); the verdict is on the median over the runs. A target whose lines
are missing from a run (a peer not installed, a cell that failed) is reported as not measured
in that run, never as met. Prints a Markdown table for docs/benchmarks.md, then the context
ratios (not targets) that runs with them carry: the large transfers against raw UCX with the
end-to-end checks every AOBJ transfer has ("ucx-verified", aobj-bench --ucx-verified).
"""
import json
import statistics
import sys

MIB = 1 << 20


def cell(run, section, system, op, size, in_flight):
    for c in run['results']:
        if (c['section'], c['system'], c['op'], c['size'], c['in_flight']) == \
                (section, system, op, size, in_flight) and not c['error'] and c['ops'] > 0:
            return c
    return None


def p50(c):
    return c['latency_us']['p50']


def ops(c):
    return c['ops_per_s']


def gbps(c):
    return c['gbps']


# (what the issue asks, how the ratio is taken, the bound, '<=' or '>=')
# Each ratio: (numerator cell, denominator cell, metric); cells as (section, system, op, size,
# in flight). "aobj-memory" is the library's default: fast path on, inline bodies, confined data
# channel unless the run says otherwise.
TARGETS = [
    ('4 KiB GET p50 <= 0.5x nginx+wrk', ('small', 'aobj-memory', 'GET', 4096, 1),
     ('small', 'nginx-wrk', 'GET', 4096, 1), p50, 0.5, '<='),
    ('4 KiB GET, 16 in flight: >= 1.5x nginx+wrk req/s', ('small', 'aobj-memory', 'GET', 4096, 16),
     ('small', 'nginx-wrk', 'GET', 4096, 16), ops, 1.5, '>='),
    ('4 KiB PUT p50 <= 0.5x nginx (curl, dav)', ('small', 'aobj-memory', 'PUT', 4096, 1),
     ('small', 'nginx', 'PUT', 4096, 1), p50, 0.5, '<='),
    ('batch of 256 x 4 KiB reads >= 10x the objects/s of single GETs',
     ('batch', 'aobj-memory-batch256', 'GET', 4096, 1), ('batch', 'aobj-memory-single', 'GET', 4096, 1),
     ops, 10.0, '>='),
    ('64 MiB GET >= 0.9x raw UCX', ('sweep', 'aobj-memory', 'GET', 64 * MIB, 1),
     ('sweep', 'ucx', 'GET', 64 * MIB, 1), gbps, 0.9, '>='),
    ('64 MiB PUT, opaque ETags: >= 0.8x raw UCX', ('sweep', 'aobj-memory-opaque', 'PUT', 64 * MIB, 1),
     ('sweep', 'ucx', 'PUT', 64 * MIB, 1), gbps, 0.8, '>='),
    ('64 MiB GET, 8 client processes >= 1.5x one', ('sweep', 'aobj-memory-8p', 'GET', 64 * MIB, 8),
     ('sweep', 'aobj-memory', 'GET', 64 * MIB, 1), gbps, 1.5, '>='),
]

# Not targets: what the 64 MiB ratios are against a raw UCX transfer that also does the
# checksums AOBJ requires (AOBJ-DAT-004, AOBJ-DAT-005), one after the other.
CONTEXT = [
    ('64 MiB GET against ucx-verified', ('sweep', 'aobj-memory', 'GET', 64 * MIB, 1),
     ('sweep', 'ucx-verified', 'GET', 64 * MIB, 1), gbps),
    ('64 MiB PUT, opaque ETags, against ucx-verified',
     ('sweep', 'aobj-memory-opaque', 'PUT', 64 * MIB, 1),
     ('sweep', 'ucx-verified', 'PUT', 64 * MIB, 1), gbps),
    ('ucx-verified 64 MiB GET against raw UCX', ('sweep', 'ucx-verified', 'GET', 64 * MIB, 1),
     ('sweep', 'ucx', 'GET', 64 * MIB, 1), gbps),
    ('ucx-verified 64 MiB PUT against raw UCX', ('sweep', 'ucx-verified', 'PUT', 64 * MIB, 1),
     ('sweep', 'ucx', 'PUT', 64 * MIB, 1), gbps),
]


def ratios(runs, num, den, metric):
    per_run = []
    for run in runs:
        a, b = cell(run, *num), cell(run, *den)
        per_run.append(metric(a) / metric(b) if a and b and metric(b) > 0 else None)
    return per_run, ' / '.join('-' if r is None else f'{r:.2f}x' for r in per_run)


def main(paths):
    if not paths:
        sys.exit(__doc__)
    runs = [json.load(open(p)) for p in paths]
    print('| target | per run | median | verdict |')
    print('|---|---|---|---|')
    for name, num, den, metric, bound, sense in TARGETS:
        per_run, shown = ratios(runs, num, den, metric)
        got = [r for r in per_run if r is not None]
        if not got:
            print(f'| {name} | {shown} | - | not measured |')
            continue
        m = statistics.median(got)
        met = m <= bound if sense == '<=' else m >= bound
        missing = '' if len(got) == len(runs) else f' ({len(runs) - len(got)} run(s) without it)'
        print(f'| {name} | {shown} | **{m:.2f}x** | {"met" if met else "not met"}{missing} |')
    context = [(name, *ratios(runs, num, den, metric)) for name, num, den, metric in CONTEXT]
    context = [(name, per_run, shown) for name, per_run, shown in context
               if any(r is not None for r in per_run)]
    if context:
        print('\n| context (not a target) | per run | median |')
        print('|---|---|---|')
        for name, per_run, shown in context:
            m = statistics.median([r for r in per_run if r is not None])
            print(f'| {name} | {shown} | **{m:.2f}x** |')


if __name__ == '__main__':
    main(sys.argv[1:])

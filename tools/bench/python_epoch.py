#!/usr/bin/env python3
"""One PyTorch epoch over a bucket, through aobj and through HTTP (docs/benchmarks.md, 13).

Writes the same objects to an aobj-server (filesystem store, the embedded default) and to the
document root of an nginx, then reads them as a PyTorch user would: a DataLoader with worker
processes over a map-style dataset (one request per item) and over an iterable one (aobj: batches
of keys with get_many), decoding each object into a uint8 tensor. HTTP is read with `requests`
(a Session per worker, keep-alive), the usual Python client. Epochs of the variants alternate;
the first of each is a warm-up; the table gives the median of the rest. Everything runs on
127.0.0.1 (UCX_NET_DEVICES=lo).

    PYTHONPATH=build/python python3 tools/bench/python_epoch.py --build build
"""

import argparse
import os
import pathlib
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import requests
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

import aobj
from aobj.datasets import DataLoader, ObjectDataset, ObjectIterableDataset

BUCKET = "bench"


def to_tensor(key, data):
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


class HttpDataset(Dataset):
    """Map-style: GET http://host/KEY with requests, one Session per worker process."""

    def __init__(self, base, keys):
        self.base, self.keys, self.session, self.pid = base, keys, None, -1

    def __len__(self):
        return len(self.keys)

    def _session(self):
        if self.session is None or self.pid != os.getpid():
            self.session, self.pid = requests.Session(), os.getpid()
        return self.session

    def __getitem__(self, i):
        r = self._session().get(f"{self.base}/{self.keys[i]}")
        r.raise_for_status()
        return to_tensor(self.keys[i], r.content)

    def __getstate__(self):
        return {"base": self.base, "keys": self.keys}

    def __setstate__(self, s):
        self.__init__(s["base"], s["keys"])


class HttpIterableDataset(IterableDataset):
    """Iterable: each worker GETs its share of the keys in order, one at a time."""

    def __init__(self, base, keys):
        self.base, self.keys = base, keys

    def __iter__(self):
        info = get_worker_info()
        w, n = (info.id, info.num_workers) if info else (0, 1)
        with requests.Session() as s:
            for k in self.keys[w::n]:
                r = s.get(f"{self.base}/{k}")
                r.raise_for_status()
                yield to_tensor(k, r.content)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(root: pathlib.Path):
    port = free_port()
    (root / "tmp").mkdir()
    conf = root / "nginx.conf"
    conf.write_text(f"""daemon off;
master_process off;
worker_processes 1;
error_log {root}/error.log warn;
pid {root}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off; sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 100000000; keepalive_timeout 300s;
  default_type application/octet-stream;
  client_body_temp_path {root}/tmp/body; proxy_temp_path {root}/tmp/proxy;
  fastcgi_temp_path {root}/tmp/fastcgi; uwsgi_temp_path {root}/tmp/uwsgi;
  scgi_temp_path {root}/tmp/scgi;
  server {{ listen 127.0.0.1:{port}; root {root}/www; }}
}}
""")
    proc = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("nginx did not start")


def start_server(build: pathlib.Path, root: pathlib.Path, creds: pathlib.Path):
    port_file = root / "port"
    env = dict(os.environ, UCX_NET_DEVICES="lo", UCX_WARN_UNUSED_ENV_VARS="n")
    proc = subprocess.Popen([str(build / "aobj-server"), "--store", "fs", "--root",
                             str(root / "store"), "--listen", "127.0.0.1:0", "--port-file",
                             str(port_file), "--credentials", str(creds), "--plaintext",
                             "--create-bucket", BUCKET, "--quiet"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1000):
        if port_file.exists() and port_file.read_text().strip():
            return proc, f"127.0.0.1:{port_file.read_text().strip()}"
        time.sleep(0.02)
    raise RuntimeError("aobj-server did not start")


def epoch(loader):
    start, n, octets = time.perf_counter(), 0, 0
    for batch in loader:
        items = batch if isinstance(batch, list) else [batch]
        for t in items:
            n += t.shape[0] if t.dim() > 1 else 1
            octets += t.numel()
    return time.perf_counter() - start, n, octets


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--small-count", type=int, default=10000)
    p.add_argument("--small-size", type=int, default=16384)
    p.add_argument("--large-count", type=int, default=64)
    p.add_argument("--large-size", type=int, default=16 << 20)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3, help="measured epochs (after one warm-up)")
    args = p.parse_args()
    os.environ.setdefault("UCX_NET_DEVICES", "lo")
    build = pathlib.Path(args.build).resolve()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="aobj-pybench-"))
    procs = []
    try:
        creds = tmp / "creds"
        creds.write_text("AKBENCH bench-secret\n")
        creds.chmod(0o600)
        server, endpoint = start_server(build, tmp, creds)
        procs.append(server)
        kw = dict(endpoint=endpoint, access_key_id="AKBENCH", secret_access_key="bench-secret")
        rng = np.random.default_rng(1)
        sets = {"small": (args.small_count, args.small_size),
                "large": (args.large_count, args.large_size)}
        keys = {}
        with aobj.Client(**kw) as c:
            for name, (count, size) in sets.items():
                keys[name] = [f"{name}/{i:05d}" for i in range(count)]
                blob = rng.integers(0, 256, size, dtype=np.uint8)
                for k in keys[name]:
                    blob[:8] = np.frombuffer(k.encode()[-8:].ljust(8, b"_"), dtype=np.uint8)
                    c.put(BUCKET, k, blob)
                    path = tmp / "www" / k
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(blob.tobytes())
        nginx, base = start_nginx(tmp)
        procs.append(nginx)
        print(f"# {args.small_count} x {args.small_size} B and {args.large_count} x "
              f"{args.large_size >> 20} MiB; DataLoader num_workers={args.workers}; "
              f"torch {torch.__version__}; requests {requests.__version__}; "
              f"{os.cpu_count()} cores", flush=True)
        rows = []
        for name, (count, size) in sets.items():
            bs = 64 if name == "small" else 1
            variants = {
                "aobj, map-style (get per item)":
                    ObjectDataset(BUCKET, keys=keys[name], decode=to_tensor, client_kwargs=kw),
                "aobj, map-style (get_into a tensor)":
                    ObjectDataset(BUCKET, keys=keys[name], tensor_shape=(size,),
                                  dtype=torch.uint8, client_kwargs=kw),
                "aobj, iterable (get_many, 16 keys)":
                    ObjectIterableDataset(BUCKET, name + "/", tensor_shape=(size,),
                                          dtype=torch.uint8, batch=16, client_kwargs=kw),
                "HTTP nginx + requests, map-style": HttpDataset(base, keys[name]),
                "HTTP nginx + requests, iterable": HttpIterableDataset(base, keys[name]),
            }
            loaders = {v: DataLoader(ds, batch_size=bs, num_workers=args.workers,
                                     persistent_workers=True) for v, ds in variants.items()}
            times = {v: [] for v in variants}
            for e in range(args.epochs + 1):
                for v, loader in loaders.items():
                    took, n, octets = epoch(loader)
                    if n != count or octets != count * size:
                        raise RuntimeError(f"{v}: read {n} objects, {octets} octets")
                    if e > 0:
                        times[v].append(took)
            http = statistics.median(times["HTTP nginx + requests, map-style"])
            for v in variants:
                t = statistics.median(times[v])
                rows.append((name, v, t, count / t, count * size / t / 1e6, http / t))
            del loaders
        print("\n| objects | reader | epoch (median) | objects/s | MB/s | vs HTTP map-style |")
        print("|---|---|---|---|---|---|")
        for name, v, t, ops, mbs, ratio in rows:
            print(f"| {name} | {v} | {t:.2f} s | {ops:,.0f} | {mbs:,.0f} | {ratio:.2f}x |")
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""The Python client against a real aobj-server: round trips, zero copy, errors, threads, a
killed server. Every test uses 127.0.0.1 and UCX_NET_DEVICES=lo."""

import array
import asyncio
import hashlib
import os
import pickle
import pydoc
import signal
import threading
import time
import uuid

import numpy as np
import pytest

import aobj
from conftest import KEY, SECRET


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def pattern(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


# ---- round trips --------------------------------------------------------------------------------

def test_small_round_trip_and_info(client):
    key = unique("small")
    t = client.put("demo", key, b"hello", content_type="text/plain", metadata={"Owner": "me"})
    assert t.nbytes == 5 and t.path == "inline"
    assert t.info.etag == '"' + hashlib.md5(b"hello").hexdigest() + '"'
    assert client.get("demo", key) == b"hello"
    info = client.head("demo", key)
    assert (info.size, info.content_type, info.metadata) == (5, "text/plain", {"owner": "me"})
    assert info.last_modified.year >= 2024


@pytest.mark.parametrize("size", [0, 1, 16384, 16385, 1 << 20, (1 << 20) + 1, 5 << 20])
def test_sizes_round_trip_through_every_path(client, size):
    # Around the inline threshold (16 KiB) and get()'s first staging buffer (1 MiB).
    key = unique(f"size{size}")
    data = pattern(size, size).tobytes()
    client.put("demo", key, data)
    assert client.get("demo", key) == data
    out = bytearray(size)
    n = client.get_into("demo", key, out)
    assert int(n) == size and bytes(out) == data


def test_numpy_round_trip_is_zero_copy(server):
    client = aobj.Client(**server.client_kwargs(staging="never"))
    key = unique("np")
    src = pattern(3 << 20).view(np.float32)
    t = client.put_from("demo", key, src)
    assert t.path == "rma"  # the server read the array's own memory
    dst = np.zeros_like(src)
    before = dst.__array_interface__["data"][0]
    t = client.get_into("demo", key, dst)
    # The server wrote the object by RMA into dst's memory: no staging buffer, no copy.
    assert t.path == "rma" and t.nbytes == src.nbytes and not t.staged
    assert dst.__array_interface__["data"][0] == before
    np.testing.assert_array_equal(dst, src)
    client.close()


def test_staging_modes(server):
    key = unique("stage")
    data = pattern(1 << 20).tobytes()
    small, large = np.zeros(64 << 10, dtype=np.uint8), np.zeros(1 << 20, dtype=np.uint8)
    staged = {}
    for mode in ("auto", "small", "never"):
        with aobj.Client(**server.client_kwargs(staging=mode)) as c:
            c.put_from("demo", key, np.frombuffer(data, dtype=np.uint8))
            emulated = c.session["protection"] == "emulated"
            staged[mode] = (c.get_into("demo", key, small, range=(0, (64 << 10) - 1)).staged,
                            c.get_into("demo", key, large).staged)
            assert small.tobytes() == data[: 64 << 10] and large.tobytes() == data
    assert staged["auto"] == (True, emulated)
    assert staged["small"] == (True, False)
    assert staged["never"] == (False, False)
    with pytest.raises(ValueError, match="staging"):
        aobj.Client(**server.client_kwargs(staging="sometimes"))


def test_torch_tensors_round_trip(client):
    torch = pytest.importorskip("torch")
    key = unique("torch")
    src = torch.arange(1 << 18, dtype=torch.float32)
    assert client.put_from("demo", key, src).path == "rma"
    dst = torch.empty(1 << 18, dtype=torch.float32)
    assert client.get_into("demo", key, dst).path == "rma"
    assert torch.equal(src, dst)
    # A slice view of a tensor: the octets land inside the larger tensor, nowhere else.
    big = torch.full((3 << 18,), -1.0)
    view = big[1 << 18: 2 << 18]
    client.get_into("demo", key, view)
    assert torch.equal(view, src)
    assert bool((big[: 1 << 18] == -1).all()) and bool((big[2 << 18:] == -1).all())


def test_memoryview_slice_and_array_module(client):
    key = unique("mv")
    data = pattern(100_000).tobytes()
    client.put("demo", key, memoryview(data)[10:90_010])
    buf = bytearray(b"\xee" * 100_000)
    n = client.get_into("demo", key, memoryview(buf)[5:])
    assert int(n) == 90_000
    assert buf[:5] == b"\xee" * 5 and bytes(buf[5:90_005]) == data[10:90_010]
    assert buf[90_005:] == b"\xee" * (100_000 - 90_005)  # octets past the object untouched
    arr = array.array("d", range(4096))
    client.put("demo", key, arr)
    back = array.array("d", bytes(4096 * 8))
    client.get_into("demo", key, back)
    assert back == arr


def test_ranges(client):
    key = unique("range")
    data = pattern(2 << 20).tobytes()
    client.put("demo", key, data)
    assert client.get("demo", key, range=(10, 19)) == data[10:20]
    assert client.get("demo", key, range="bytes=-7") == data[-7:]
    assert client.get("demo", key, range=(len(data) - 3, None)) == data[-3:]
    body, t = client.get_with_info("demo", key, range="bytes=100-1500099")
    assert body == data[100:1500100] and t.range == (100, 1500099, len(data))
    out = np.zeros(50, dtype=np.uint8)
    assert int(client.get_into("demo", key, out, range=(1000, 1049))) == 50
    assert out.tobytes() == data[1000:1050]
    with pytest.raises(aobj.InvalidRange):
        client.get("demo", key, range=(len(data) + 10, None))
    with pytest.raises(aobj.InvalidArgument):
        client.get("demo", key, range="bytes=9-2")
    with pytest.raises(TypeError):
        client.get("demo", key, range=5)


def test_multipart_put(client):
    key = unique("mp")
    data = pattern((1 << 20) + 12345)
    t = client.put("demo", key, data, multipart_threshold=256 << 10, part_size=256 << 10)
    assert t.info.etag.endswith('-5"')  # five parts: S3's multipart ETag
    assert client.get("demo", key) == data.tobytes()


def test_upload_and_download_files(client, tmp_path):
    key = unique("file")
    src = tmp_path / "in.bin"
    data = pattern((3 << 20) + 17).tobytes()
    src.write_bytes(data)
    t = client.upload_file(src, "demo", key, content_type="application/x-test")
    assert t.nbytes == len(data)
    dst = tmp_path / "out" / "copy.bin"
    dst.parent.mkdir()
    assert int(client.download_file("demo", key, dst)) == len(data)
    assert dst.read_bytes() == data and client.head("demo", key).content_type == "application/x-test"
    # Multipart from a mapped file; an empty file.
    client.upload_file(src, "demo", key + "-mp", multipart_threshold=1 << 20, part_size=1 << 20)
    assert client.get("demo", key + "-mp") == data
    (tmp_path / "empty").write_bytes(b"")
    client.upload_file(tmp_path / "empty", "demo", key + "-0")
    client.download_file("demo", key + "-0", tmp_path / "empty.out")
    assert (tmp_path / "empty.out").read_bytes() == b""
    # A failed download leaves nothing behind, and no existing file is touched.
    dst.write_bytes(b"keep")
    with pytest.raises(aobj.NoSuchKey):
        client.download_file("demo", key + "-absent", dst)
    assert dst.read_bytes() == b"keep" and sorted(p.name for p in dst.parent.iterdir()) == ["copy.bin"]


def test_conditions_copy_list_delete(client):
    prefix = unique("dir") + "/"
    keys = [f"{prefix}{i:03d}" for i in range(25)]
    for k in keys:
        client.put("demo", k, k.encode())
    with pytest.raises(aobj.PreconditionFailed):
        client.put("demo", keys[0], b"x", if_none_match="*")
    etag = client.head("demo", keys[0]).etag
    with pytest.raises(aobj.NotModified):
        client.get("demo", keys[0], if_none_match=etag)
    info = client.copy("demo", keys[0], "demo", prefix + "copy", metadata={"k": "v"})
    assert info.metadata == {"k": "v"}
    assert client.get("demo", prefix + "copy") == keys[0].encode()
    listed = [o.key for o in client.list("demo", prefix, page_size=7)]
    assert listed == sorted(keys + [prefix + "copy"])
    page = client.list_objects("demo", prefix=prefix[:-5], delimiter="/")
    assert prefix in page.common_prefixes
    deleted, errors = client.delete_objects("demo", keys)
    assert sorted(deleted) == keys and errors == []
    client.delete("demo", prefix + "copy")
    assert not client.exists("demo", prefix + "copy")
    assert list(client.list("demo", prefix)) == []


def test_session_tells_what_the_server_negotiated(client):
    s = client.session
    assert len(s["session_id"]) == 32 and s["version"] == 1
    assert s["limits"]["inline_threshold"] == 16384
    assert s["limits"]["min_part_size"] == 65536  # announced (conftest: --min-part-size 65536)
    # AOBJ-OBJ-255, AOBJ-OBJ-256: the reference server's defaults, announced.
    assert s["limits"]["max_key_bytes"] == 1024 and s["limits"]["max_list_page"] == 1000
    assert s["limits"]["max_part_size"] == 5 << 30
    assert s["limits"]["max_object_size"] == 5 << 40
    assert s["protection"] in ("emulated", "hardware")


def test_fast_path_is_on_by_default_and_can_be_turned_off(server):
    # Spec 8.9: with the reference server, requests on one object go as active messages unless
    # the caller asks for gRPC only; the results are the same either way.
    key = unique("fast")
    for fast in (True, False):
        with aobj.Client(**server.client_kwargs(fast_path=fast)) as c:
            assert c.session["fast_path"] is fast
            assert (7 in c.session["capabilities"]) is fast
            c.put("demo", key, b"either path")
            assert c.get("demo", key) == b"either path"
            c.delete("demo", key)
            with pytest.raises(aobj.NoSuchKey):
                c.head("demo", key)


def test_buckets(client):
    name = unique("bkt")
    client.create_bucket(name)
    assert name in [b.name for b in client.list_buckets()]
    client.head_bucket(name)
    client.put(name, "k", b"v")
    with pytest.raises(aobj.BucketNotEmpty):
        client.delete_bucket(name)
    client.delete(name, "k")
    client.delete_bucket(name)
    with pytest.raises(aobj.NoSuchBucket):
        client.head_bucket(name)
    with pytest.raises(aobj.InvalidBucketName):
        client.create_bucket("Bad_Name")


# ---- registrations and pools --------------------------------------------------------------------

def test_registration_serves_windows_inside_it(client):
    key = unique("reg")
    data = pattern(64 << 10).tobytes()
    client.put("demo", key, data)
    arena = np.zeros(1 << 20, dtype=np.uint8)
    with client.register(arena) as reg:
        assert reg.active and reg.nbytes == arena.nbytes
        assert client.stats()["registrations"] == 1
        for i in range(8):  # windows at different offsets of one registration
            window = arena[i * (64 << 10): (i + 1) * (64 << 10)]
            t = client.get_into("demo", key, window)
            assert t.path == "rma" and not t.staged  # straight into the registration
            assert window.tobytes() == data
    assert not reg.active and client.stats()["registrations"] == 0
    # Released: a small window outside every registration is staged through the pool and
    # copied (cheaper than registering it for one call).
    t = client.get_into("demo", key, arena[: 64 << 10])
    assert t.staged and arena[: 64 << 10].tobytes() == data


def test_get_pools_its_staging_memory(client):
    key = unique("pool")
    client.put("demo", key, pattern(200_000).tobytes())
    for _ in range(20):
        client.get("demo", key)
    # One staging buffer serves the loop: the pool does not grow per call.
    assert 0 < client.stats()["pooled_bytes"] <= 2 << 20


# ---- errors -------------------------------------------------------------------------------------

def test_errors_carry_code_name_and_retryability(client):
    with pytest.raises(aobj.NoSuchKey) as e:
        client.get("demo", unique("missing"))
    err = e.value
    assert isinstance(err, aobj.Error)
    assert (err.code, err.name, err.s3_code, err.retryable) == (21, "NO_SUCH_KEY", "NoSuchKey",
                                                                False)
    assert str(err).startswith("NO_SUCH_KEY (NoSuchKey): ")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is aobj.NoSuchKey and again.message == err.message
    with pytest.raises(aobj.NoSuchBucket):
        client.get("nosuchbucket", "k")
    assert aobj.SlowDown.retryable and not aobj.AccessDenied.retryable


def test_buffer_too_small_and_unsuitable_buffers(client):
    key = unique("toosmall")
    client.put("demo", key, pattern(100_000).tobytes())
    with pytest.raises(aobj.DescriptorTooSmall):
        client.get_into("demo", key, bytearray(99_999))
    # The same for a body that comes back inline (AOBJ-DAT-162), and nothing is written.
    client.put("demo", key + "-inline", b"x" * 1000)
    small = bytearray(b"\xee" * 999)
    with pytest.raises(aobj.DescriptorTooSmall, match="1000 octets"):
        client.get_into("demo", key + "-inline", small)
    assert small == bytearray(b"\xee" * 999)
    with pytest.raises(TypeError, match="writable"):
        client.get_into("demo", key, b"\0" * 100_000)  # bytes are immutable
    with pytest.raises(TypeError, match="contiguous"):
        client.get_into("demo", key, np.zeros((400, 400), dtype=np.uint8)[:, ::2])
    with pytest.raises(TypeError, match="buffer protocol"):
        client.put("demo", key, "a str is not bytes")


def test_bad_credentials_and_no_server(server):
    with pytest.raises(aobj.InvalidAccessKeyId):
        aobj.Client(server.endpoint, access_key_id="AKNOBODY", secret_access_key="x")
    with pytest.raises(aobj.SignatureDoesNotMatch):
        aobj.Client(server.endpoint, access_key_id=KEY, secret_access_key="wrong")
    with pytest.raises(aobj.Internal) as e:
        aobj.Client("127.0.0.1:1", access_key_id=KEY, secret_access_key=SECRET, timeout=5)
    assert e.value.transport == "connection refused"
    assert "no reply from the server: connection refused" in str(e.value)
    with pytest.raises(ValueError, match="no scheme"):
        aobj.Client("http://127.0.0.1:1", access_key_id=KEY, secret_access_key=SECRET)


def test_credentials_from_a_profile(server, tmp_path, monkeypatch):
    creds = tmp_path / "credentials"
    creds.write_text(f"[lab]\naws_access_key_id = {KEY}\naws_secret_access_key = {SECRET}\n")
    creds.chmod(0o600)
    config = tmp_path / "config"
    config.write_text(f"[profile lab]\nendpoint = {server.endpoint}\n")
    for var in ("AOBJ_ACCESS_KEY_ID", "AOBJ_SECRET_ACCESS_KEY", "AOBJ_CREDENTIALS_FILE",
                "AOBJ_ENDPOINT", "AOBJ_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AOBJ_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AOBJ_CONFIG_FILE", str(config))
    with aobj.Client(profile="lab") as c:
        assert c.session["endpoint"] == server.endpoint
        assert c.session["access_key_id"] == KEY
    with pytest.raises(aobj.Error, match="nosuch"):
        aobj.Client(profile="nosuch")


def test_closed_client_refuses_calls(server):
    c = aobj.Client(**server.client_kwargs())
    c.close()
    c.close()  # idempotent
    assert c.closed and "closed" in repr(c)
    with pytest.raises(ValueError, match="closed"):
        c.get("demo", "k")


# ---- threads, batches, futures, asyncio ---------------------------------------------------------

def test_threads_share_one_client(client):
    prefix = unique("thr")
    blobs = {f"{prefix}/{i}": pattern(50_000 + i * 1000, i).tobytes() for i in range(16)}
    for k, v in blobs.items():
        client.put("demo", k, v)
    failures = []

    def reader(keys):
        try:
            for _ in range(5):
                for k in keys:
                    out = bytearray(len(blobs[k]))
                    client.get_into("demo", k, out)
                    if bytes(out) != blobs[k]:
                        failures.append(k)
        except Exception as e:  # noqa: BLE001
            failures.append(repr(e))

    keys = list(blobs)
    threads = [threading.Thread(target=reader, args=(keys[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_close_while_other_threads_call(server):
    # Closing from one thread while others are inside calls ends them with errors, never a
    # crash: each call holds the session's memory until it returns.
    c = aobj.Client(**server.client_kwargs())
    key = unique("closing")
    c.put("demo", key, pattern(1 << 20).tobytes())
    outcomes = []
    started = threading.Barrier(5)

    def reader():
        started.wait()
        buf = np.zeros(1 << 20, dtype=np.uint8)
        try:
            while True:
                c.get_into("demo", key, buf)
                c.get("demo", key)
        except (ValueError, aobj.Error) as e:  # closed, or the session ended under the call
            outcomes.append(type(e).__name__)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    started.wait()
    time.sleep(0.2)
    c.close()
    for t in threads:
        t.join(30)
    assert len(outcomes) == 4 and not any(t.is_alive() for t in threads)


def wait_stopped(pid, timeout=10.0):
    """Waits until every thread of `pid` is stopped (state T), as SIGSTOP leaves them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:
                continue
        if states and all(s in ("T", "t") for s in states):
            return
        time.sleep(0.001)
    raise AssertionError(f"process {pid} did not stop")


def test_calls_release_the_gil(own_server):
    # A call blocked on a frozen server must not hold the GIL: another thread runs meanwhile.
    c = aobj.Client(**own_server.client_kwargs(busy_retries=0, timeout=3))
    c.put("demo", "k", b"v")
    started = threading.Event()
    outcome = []

    def blocked():
        started.set()
        t0 = time.monotonic()
        try:
            c.head("demo", "k")
            outcome.append("ok")
        except aobj.Error as e:
            outcome.append(e.name)
        outcome.append(time.monotonic() - t0)

    os.kill(own_server.proc.pid, signal.SIGSTOP)
    wait_stopped(own_server.proc.pid)  # kill() returns before every thread has stopped
    try:
        t = threading.Thread(target=blocked)
        t.start()
        started.wait()
        time.sleep(0.3)
        ran_while_blocked = t.is_alive()  # this thread ran Python while the call waited
    finally:
        os.kill(own_server.proc.pid, signal.SIGCONT)
    t.join(30)
    assert ran_while_blocked, outcome
    assert outcome and outcome[0] in ("ok", "DEADLINE_EXCEEDED")
    c.close()


def test_get_many_into_buffers_and_as_bytes(client):
    prefix = unique("many")
    keys = [f"{prefix}/{i}" for i in range(40)]
    blobs = [pattern(1000 + 997 * i, i).tobytes() for i in range(40)]
    big_key = f"{prefix}/big"
    big = pattern(3 << 20, 99).tobytes()  # larger than a staging buffer
    for k, b in zip(keys, blobs):
        client.put("demo", k, b)
    client.put("demo", big_key, big)
    assert client.get_many("demo", keys + [big_key]) == blobs + [big]
    # Batched (BATCH_GET): a region of 64 KiB per key; one octet more is read alone.
    edges = {f"{prefix}/edge-{n}": pattern(n, n % 251).tobytes() for n in (65536, 65537, 0)}
    for k, b in edges.items():
        client.put("demo", k, b)
    assert client.get_many("demo", list(edges) + keys[:3]) == list(edges.values()) + blobs[:3]
    buffers = [np.zeros(len(b), dtype=np.uint8) for b in blobs]
    results = client.get_many("demo", keys, buffers, max_in_flight=8)
    assert [int(r) for r in results] == [len(b) for b in blobs]
    assert all(buf.tobytes() == b for buf, b in zip(buffers, blobs))
    # Buffers inside a registration: one GetObjects for them all (BATCH_GET), each key's result
    # its own: a buffer one octet short fails DESCRIPTOR_TOO_SMALL, an absent key NO_SUCH_KEY.
    arena = np.zeros(sum(len(b) for b in blobs) + 4096, dtype=np.uint8)
    with client.register(arena):
        views, at = [], 0
        for b in blobs:
            views.append(arena[at: at + len(b)])
            at += len(b)
        before = client.stats()["batched_keys"]
        results = client.get_many("demo", keys, views)
        assert client.stats()["batched_keys"] == before + len(keys)  # none read alone
        assert [int(r) for r in results] == [len(b) for b in blobs]
        assert all(v.tobytes() == b for v, b in zip(views, blobs))
        assert not any(r.staged for r in results)
        short = arena[at: at + len(blobs[1]) - 1]
        spare = arena[at + len(blobs[1]): at + len(blobs[1]) + 1000]
        edge = client.get_many("demo", [keys[0], keys[1], f"{prefix}/absent"],
                               [views[0], short, spare], return_exceptions=True)
        assert int(edge[0]) == len(blobs[0])
        assert isinstance(edge[1], aobj.DescriptorTooSmall)
        assert isinstance(edge[2], aobj.NoSuchKey)
    mixed = client.get_many("demo", [keys[0], f"{prefix}/absent"], return_exceptions=True)
    assert mixed[0] == blobs[0] and isinstance(mixed[1], aobj.NoSuchKey)
    with pytest.raises(aobj.NoSuchKey):
        client.get_many("demo", [keys[0], f"{prefix}/absent"])
    with pytest.raises(ValueError):
        client.get_many("demo", keys, buffers[:3])


def test_put_many_stores_each_object(client):
    prefix = unique("putmany")
    objects = {f"{prefix}/{i}": pattern(1 + 331 * i, i).tobytes() for i in range(300)}
    # Batched (BATCH_PUT) up to 64 KiB per object; larger ones and empty ones too.
    objects[f"{prefix}/edge"] = pattern(65536, 7).tobytes()
    objects[f"{prefix}/big"] = pattern(65537, 8).tobytes()
    objects[f"{prefix}/empty"] = b""
    objects[f"{prefix}/array"] = np.arange(1000, dtype=np.uint16)
    infos = client.put_many("demo", objects, content_type="application/x-test", max_in_flight=4)
    assert len(infos) == len(objects)
    for (key, data), info in zip(objects.items(), infos):
        raw = data.tobytes() if isinstance(data, np.ndarray) else data
        assert info.size == len(raw)
        head = client.head("demo", key)
        assert head.etag == info.etag and head.content_type == "application/x-test"
    keys = list(objects)
    got = client.get_many("demo", keys)
    assert got == [d.tobytes() if isinstance(d, np.ndarray) else d for d in objects.values()]
    # Pairs work too; a key of a bucket that does not exist fails (as its aobj error).
    pairs = [(f"{prefix}/pair-{i}", b"x" * i) for i in range(3)]
    assert [i.size for i in client.put_many("demo", pairs)] == [0, 1, 2]
    with pytest.raises(aobj.NoSuchBucket):
        client.put_many("no-such-bucket-here", pairs)
    failed = client.put_many("no-such-bucket-here", pairs, return_exceptions=True)
    assert all(isinstance(f, aobj.NoSuchBucket) for f in failed)


def test_batches_reuse_the_clients_threads(server):
    """get_many starts its helper threads once per client, not once per batch."""
    def threads():
        return set(os.listdir("/proc/self/task"))

    with aobj.Client(**server.client_kwargs()) as c:
        # More keys than one GetObjects request takes (256), so that requests run in parallel.
        keys = [unique("reuse") for _ in range(600)]
        for k in keys:
            c.put("demo", k, b"r" * 512)
        before = threads()
        assert c.get_many("demo", keys, max_in_flight=8) == [b"r" * 512] * 600
        helpers = threads() - before
        assert len(helpers) >= 1  # helpers started, and stayed ...
        seen = set()
        for _ in range(5):
            c.get_many("demo", keys, max_in_flight=8)
            now = threads()
            assert helpers <= now
            seen |= now - before - helpers
        # ... and served the later batches: a thread per batch would be 7 new ones each time
        # (gRPC may start one of its own meanwhile).
        assert len(seen) < 7, seen


def test_futures_and_asyncio(client):
    key = unique("fut")
    data = pattern(300_000).tobytes()
    assert int(client.submit_put("demo", key, data).result(30)) == len(data)
    futures = [client.submit_get("demo", key) for _ in range(8)]
    assert all(f.result(30) == data for f in futures)

    async def main():
        out = bytearray(len(data))
        got, t = await asyncio.gather(client.aget("demo", key),
                                      client.aget_into("demo", key, out))
        await client.aput("demo", key + "-2", out)
        return got, t, out

    got, t, out = asyncio.run(main())
    assert got == data and int(t) == len(data) and bytes(out) == data
    assert client.get("demo", key + "-2") == data


# ---- a killed server ----------------------------------------------------------------------------

def test_a_killed_server_gives_errors_not_hangs(own_server):
    c = aobj.Client(**own_server.client_kwargs(timeout=10, busy_retries=0))
    data = pattern(2 << 20).tobytes()
    c.put("demo", "k", data)
    own_server.proc.kill()
    own_server.proc.wait()
    start = time.monotonic()
    for call in (lambda: c.get("demo", "k"), lambda: c.head("demo", "k"),
                 lambda: c.get_into("demo", "k", bytearray(len(data)))):
        with pytest.raises(aobj.Error) as e:
            call()
        assert e.value.name in ("INTERNAL", "DATA_CHANNEL_UNAVAILABLE", "DEADLINE_EXCEEDED")
    assert time.monotonic() - start < 30
    c.close()  # the session is gone with the server; closing still returns


# ---- documentation ------------------------------------------------------------------------------

def test_help_documents_the_client():
    text = pydoc.render_doc(aobj.Client, renderer=pydoc.plaintext)
    for word in ("get_into", "put_from", "register", "get_many", "aget", "credentials",
                 "DescriptorTooSmall"):
        assert word in text
    assert aobj.__doc__ and "zero copy" in aobj.__doc__.lower()

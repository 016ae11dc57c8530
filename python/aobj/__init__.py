"""aobj: S3 object access over RDMA (AOBJ/1), from Python.

A ``Client`` holds one AOBJ/1 session with an ``aobj-server``: a signed gRPC control channel
and a UCX data channel over which the server writes objects straight into your memory (GET)
and reads them straight out of it (PUT). Quick start::

    import aobj, numpy as np
    with aobj.Client("127.0.0.1:7878") as c:        # credentials as the aobj CLI finds them
        c.put("demo", "hello.txt", b"hello")
        print(c.get("demo", "hello.txt"))            # b'hello'
        arr = np.empty(1 << 20, dtype=np.uint8)
        n = c.get_into("demo", "tile-0001", arr)     # the server's RMA lands in arr
        print(int(n), n.path)                        # 1048576 rma

Zero copy: ``get_into`` and ``put_from`` (and ``put`` of large bodies) register the caller's
memory (anything with the buffer protocol: bytearray, memoryview, numpy arrays; and CPU torch
tensors, pinned or not) with the data channel, and the server's RMA moves the object straight
into or out of it. A loop over the same buffers registers once with ``Client.register``.
Where a copy is cheaper than registering (small buffers; any buffer up to 64 MiB on a host
without an RDMA NIC), the octets go through pooled library memory instead (``Transfer.staged``;
``Client(staging=...)`` decides). Every call releases the GIL while it waits, so
threads run in parallel; ``get_many`` reads a batch of keys at once; ``submit_*`` return
``concurrent.futures.Future`` objects and ``aget``/``aget_into``/``aput`` are awaitables.

Errors are ``aobj.Error`` subclasses (``aobj.NoSuchKey`` ...) with ``code``, ``name``,
``s3_code`` and ``retryable`` (see ``aobj.errors``). PyTorch datasets: ``aobj.datasets``.
The protocol: spec/aobj-1.md in the aobj repository; this guide: docs/getting-started/python.md.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import datetime
import functools
import os
import threading
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from . import _aobj
from .errors import *  # noqa: F401,F403  (aobj.NoSuchKey and the others)
from .errors import Error

__all__ = ["Client", "Error", "ForkError", "ObjectInfo", "Transfer", "ObjectSummary", "ListPage", "Bucket",
           "Registration", "DEFAULT_MULTIPART_THRESHOLD", "DEFAULT_PART_SIZE"]
__all__ += [name for name in dir() if isinstance(globals()[name], type)
            and issubclass(globals()[name], Error) and name not in __all__]

__version__ = "0.1.0"

DEFAULT_MULTIPART_THRESHOLD = 64 << 20  # put(): bodies from this size go as multipart uploads
DEFAULT_PART_SIZE = 16 << 20            # ... in parts of this size (as the aobj CLI does)

Registration = _aobj.Registration


class ForkError(RuntimeError):
    """A Client was opened in a process forked from one that had opened a Client.

    gRPC, which carries the control channel, does not survive fork(): a session opened in such
    a child can hang. Start worker processes with the "forkserver" or "spawn" method instead
    (``aobj.datasets.DataLoader`` does so by default; for torch's own DataLoader pass
    ``multiprocessing_context="forkserver"``; for multiprocessing, ``get_context("forkserver")``).
    """


class _ForkState:
    used = False  # this process opened a Client (gRPC is initialized)
    tainted = False  # this process is a fork() child of one that had


def _after_fork_in_child() -> None:
    _ForkState.tainted = _ForkState.tainted or _ForkState.used


os.register_at_fork(after_in_child=_after_fork_in_child)

Buffer = Any  # an object with the buffer protocol, or a CPU torch tensor
Range = Union[str, tuple]  # "bytes=0-99", "bytes=100-", "bytes=-50", (0, 99), (100, None)


@dataclasses.dataclass(frozen=True)
class ObjectInfo:
    """What the server keeps about an object besides its bytes (HEAD)."""
    size: int
    etag: str  # quoted, as S3 writes it: '"9e107d9d372bb6826bd81d3542a419d6"'
    last_modified_ms: int  # Unix epoch milliseconds
    content_type: str
    crc32c: int  # CRC32C of the whole content
    metadata: dict  # S3 user metadata (x-amz-meta-*), names lower-case

    @property
    def last_modified(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.last_modified_ms / 1000,
                                               tz=datetime.timezone.utc)


@dataclasses.dataclass(frozen=True)
class Transfer:
    """The result of one GET or PUT. ``int(t)`` (and ``t`` as an index) is ``nbytes``."""
    nbytes: int  # octets moved
    path: str  # "rma" (the server moved them by RMA), "inline" (inside the control message),
    #            "none" (zero octets)
    info: ObjectInfo
    range: Optional[tuple]  # (first, last, object size) for a ranged GET, else None
    staged: bool = False  # the octets went through a pooled library buffer and were copied

    def __int__(self) -> int:
        return self.nbytes

    def __index__(self) -> int:
        return self.nbytes


@dataclasses.dataclass(frozen=True)
class ObjectSummary:
    """One object of a listing."""
    key: str
    size: int
    etag: str
    last_modified_ms: int


@dataclasses.dataclass(frozen=True)
class ListPage:
    """One page of ListObjectsV2."""
    objects: list  # of ObjectSummary, in byte order of their keys
    common_prefixes: list  # of str (with a delimiter)
    is_truncated: bool
    next_continuation_token: bytes  # opaque; pass back as continuation_token


@dataclasses.dataclass(frozen=True)
class Bucket:
    name: str
    creation_time_ms: int


def _info(d: Mapping) -> ObjectInfo:
    return ObjectInfo(d["size"], d["etag"], d["last_modified_ms"], d["content_type"],
                      d["crc32c"], dict(d["metadata"]))


def _collect(entries: list, return_exceptions: bool, convert) -> list:
    """A batch's entries: each converted, or its aobj.Error raised (or kept, with
    return_exceptions)."""
    out = []
    for entry in entries:
        if isinstance(entry, Error):
            if not return_exceptions:
                raise entry
            out.append(entry)
        else:
            out.append(convert(entry))
    return out


def _transfer(d: Mapping) -> Transfer:
    return Transfer(d["nbytes"], d["path"], _info(d["info"]), d["range"], d["staged"])


class Client(_aobj._Client):
    """One AOBJ/1 session with an aobj-server.

    Client(endpoint=None, *, profile=None, access_key_id=None, secret_access_key=None,
           credentials_file=None, checksum="crc32c", timeout=120.0, opaque_etags=False,
           allow_inline=True, fast_path=True, busy_retries=5, max_in_flight=0, tls_ca=None,
           tls_cert=None, tls_key=None, tls_server_name=None, net_devices="lo", workers=8,
           staging="auto")

    endpoint: "HOST:PORT" of the server's control channel. Default: AOBJ_ENDPOINT, else the
        profile's ``endpoint`` in ~/.aobj/config, else 127.0.0.1:7878.
    Credentials, as the aobj CLI finds them (first found wins): access_key_id and
        secret_access_key given here; AOBJ_ACCESS_KEY_ID + AOBJ_SECRET_ACCESS_KEY;
        credentials_file (or AOBJ_CREDENTIALS_FILE: "ACCESS_KEY_ID SECRET" lines); the profile
        (``profile``, else AOBJ_PROFILE, else "default") of ~/.aobj/credentials. The secret
        only signs requests; it never travels.
    checksum: end-to-end checksum of every transfer, "crc32c" or "crc64nvme".
    timeout: seconds each call may take (each method's ``timeout`` can only shorten it).
    opaque_etags: objects and multipart parts this client writes get opaque version ETags
        instead of MD5 digests (faster large PUTs and uploads; do not use where ETags are
        compared with local MD5s).
    fast_path: with a server that offers it (capability FAST_PATH, spec section 8.9), requests
        on one object travel as UCX active messages on the data channel instead of gRPC calls
        (about 2.5x faster for small objects); ``session["fast_path"]`` says whether they do.
    busy_retries: how often a call the server refused as busy is sent again.
    max_in_flight: data requests this session may have in flight (0: the server's default).
    tls_*: TLS on the control channel (CA, client certificate and key for mutual TLS).
    net_devices: UCX_NET_DEVICES of the data channel ("lo": loopback only).
    workers: threads for submit_* and the async methods.
    staging: when get_into, get and put move octets through a pooled buffer of the library's
        and copy them, instead of registering the caller's memory for the call (memory inside
        a ``register``ed buffer never is): "auto" (default) below 256 KiB, and up to 64 MiB
        on sessions whose protection is "emulated" (no RDMA NIC: UCX reaches caller memory
        there only by an emulated path, slower than a copy); "small": below 256 KiB only;
        "never": always the caller's memory (zero copy).

    Raises aobj.Error (for example aobj.InvalidAccessKeyId, or aobj.Internal with
    ``transport`` "connection refused" when no server answers). Thread-safe: share one Client
    between threads; give each worker process its own (aobj.datasets does), in processes
    started by "forkserver" or "spawn": in a fork() child of a process that had opened a Client
    the constructor raises aobj.ForkError, since gRPC does not survive fork().
    Use it as a context manager, or call close().
    """

    def __init__(self, endpoint: Optional[str] = None, *, profile: Optional[str] = None,
                 access_key_id: Optional[str] = None, secret_access_key: Optional[str] = None,
                 credentials_file: Optional[str] = None, checksum: str = "crc32c",
                 timeout: float = 120.0, opaque_etags: bool = False, allow_inline: bool = True,
                 fast_path: bool = True, busy_retries: int = 5, max_in_flight: int = 0,
                 tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None,
                 tls_server_name: Optional[str] = None, net_devices: str = "lo",
                 workers: int = 8, staging: str = "auto") -> None:
        if workers < 1:
            raise ValueError("workers must be 1 or more")
        if _ForkState.tainted:
            raise ForkError(
                "this process was forked from one that had opened an aobj.Client, and gRPC "
                "does not survive fork(); start workers with the 'forkserver' or 'spawn' method "
                "(aobj.datasets.DataLoader does; torch's DataLoader takes "
                "multiprocessing_context='forkserver')")
        _ForkState.used = True
        super().__init__(endpoint or "", profile, access_key_id, secret_access_key,
                         credentials_file, checksum, float(timeout), opaque_etags, allow_inline,
                         fast_path, busy_retries, max_in_flight, tls_ca, tls_cert, tls_key,
                         tls_server_name, net_devices, f"aobj-python/{__version__}", staging)
        self._workers = workers
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._executor_lock = threading.Lock()

    # ---- session ------------------------------------------------------------------------------
    @property
    def session(self) -> dict:
        """What the server negotiated: session_id, version, limits, protection, lease_ms ..."""
        return self._session()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Closes the session (idempotent). Later calls raise ValueError. When the server
        cannot be reached the client closes anyway (the server ends the session when its
        lease lapses)."""
        with self._executor_lock:
            ex, self._executor = self._executor, None
        if ex is not None:
            ex.shutdown(wait=True)
        self._close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return "<aobj.Client closed>"
        s = self._session()
        return (f"<aobj.Client {s['endpoint']} key={s['access_key_id']} "
                f"session={s['session_id'][:8]} {s['protection']}>")

    # ---- objects ------------------------------------------------------------------------------
    def get(self, bucket: str, key: str, *, range: Optional[Range] = None,
            if_match: Optional[str] = None, if_none_match: Optional[str] = None,
            timeout: float = 0) -> bytes:
        """Returns the object's bytes (or ``range`` of them: "bytes=0-99", (0, 99), (100, None),
        "bytes=-50"). Small objects come through a pooled registered buffer; larger ones are
        written by the server straight into the returned bytes. Raises aobj.NoSuchKey,
        aobj.NoSuchBucket, aobj.InvalidRange, aobj.PreconditionFailed, aobj.NotModified ..."""
        data, _ = self._get(bucket, key, range, if_match, if_none_match, float(timeout))
        return data

    def get_with_info(self, bucket: str, key: str, *, range: Optional[Range] = None,
                      if_match: Optional[str] = None, if_none_match: Optional[str] = None,
                      timeout: float = 0) -> tuple:
        """Like get(), and the Transfer (its ObjectInfo, path, range): (bytes, Transfer)."""
        data, t = self._get(bucket, key, range, if_match, if_none_match, float(timeout))
        return data, _transfer(t)

    def get_into(self, bucket: str, key: str, buffer: Buffer, *,
                 range: Optional[Range] = None, if_match: Optional[str] = None,
                 if_none_match: Optional[str] = None, timeout: float = 0) -> Transfer:
        """Reads the object (or ``range``) into ``buffer`` from its start (any writable
        C-contiguous buffer, or a CPU torch tensor). Returns a Transfer; ``int()`` of it is the
        number of octets; octets past them are untouched. aobj.DescriptorTooSmall when the
        buffer is too small (head() tells the size).

        Zero copy: for a buffer inside a registration (``register``), the server writes into
        the buffer's own memory; outside one, the Client's ``staging`` decides between that and
        a pooled buffer of the library's plus a copy (small buffers, and on hosts without an
        RDMA NIC buffers up to 64 MiB); ``Transfer.staged`` says which."""
        return _transfer(self._get_into(bucket, key, buffer, range, if_match, if_none_match,
                                        float(timeout)))

    def put(self, bucket: str, key: str, data: Buffer, *, content_type: Optional[str] = None,
            metadata: Optional[Mapping[str, str]] = None, if_match: Optional[str] = None,
            if_none_match: Optional[str] = None,
            multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
            part_size: int = DEFAULT_PART_SIZE, timeout: float = 0) -> Transfer:
        """Stores ``data`` (bytes, bytearray, memoryview, numpy array, CPU tensor) under
        bucket/key. Small bodies are copied into a pooled registered buffer (cheaper than
        registering them); larger ones are read by the server straight from ``data``, which
        must not change until the call returns. From ``multipart_threshold`` octets (0: never)
        the object goes as a multipart upload of ``part_size`` parts, several in flight.
        ``if_none_match="*"`` creates only; ``if_match=ETAG`` replaces only that version."""
        return _transfer(self._put(bucket, key, data, content_type,
                                   dict(metadata) if metadata is not None else None, if_match,
                                   if_none_match, multipart_threshold, part_size, True,
                                   float(timeout)))

    def put_from(self, bucket: str, key: str, buffer: Buffer, **kwargs) -> Transfer:
        """put() that never copies: the server reads the caller's memory, whatever its size
        (bodies up to the session's inline threshold still travel inside the request)."""
        kwargs.setdefault("multipart_threshold", DEFAULT_MULTIPART_THRESHOLD)
        kwargs.setdefault("part_size", DEFAULT_PART_SIZE)
        metadata = kwargs.get("metadata")
        return _transfer(self._put(bucket, key, buffer, kwargs.get("content_type"),
                                   dict(metadata) if metadata is not None else None,
                                   kwargs.get("if_match"), kwargs.get("if_none_match"),
                                   kwargs["multipart_threshold"], kwargs["part_size"], False,
                                   float(kwargs.get("timeout", 0))))

    def head(self, bucket: str, key: str, *, if_match: Optional[str] = None,
             if_none_match: Optional[str] = None) -> ObjectInfo:
        """The object's ObjectInfo (size, etag, content type, metadata ...). aobj.NoSuchKey."""
        return _info(self._head(bucket, key, if_match, if_none_match))

    def exists(self, bucket: str, key: str) -> bool:
        """True when bucket/key holds an object (False on NoSuchKey; other errors raise)."""
        try:
            self._head(bucket, key, None, None)
            return True
        except errors.NoSuchKey:  # noqa: F405
            return False

    def delete(self, bucket: str, key: str) -> None:
        """Deletes bucket/key; deleting a missing key succeeds, as in S3."""
        self._delete(bucket, key)

    def delete_objects(self, bucket: str, keys: Sequence[str], *, quiet: bool = False) -> tuple:
        """Batch delete: (deleted keys, [(key, aobj.Error), ...]). More than 1000 keys go as
        several requests."""
        return self._delete_objects(bucket, list(keys), quiet)

    def copy(self, source_bucket: str, source_key: str, bucket: str, key: str, *,
             content_type: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None,
             source_if_match: Optional[str] = None, if_match: Optional[str] = None,
             if_none_match: Optional[str] = None) -> ObjectInfo:
        """Server-side copy (no bytes move through this client). The copy keeps the source's
        content type and metadata unless either is given (S3's REPLACE directive)."""
        return _info(self._copy(source_bucket, source_key, bucket, key, content_type,
                                dict(metadata) if metadata is not None else None,
                                source_if_match, if_match, if_none_match))

    # ---- files ----------------------------------------------------------------------------------
    def upload_file(self, path: Union[str, os.PathLike], bucket: str, key: str, *,
                    content_type: Optional[str] = None,
                    metadata: Optional[Mapping[str, str]] = None,
                    multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
                    part_size: int = DEFAULT_PART_SIZE) -> Transfer:
        """Stores the file at ``path`` under bucket/key (boto3's upload_file). The file is
        mapped, not read: the server reads its pages (or, where staging applies, the library
        copies them once). From ``multipart_threshold`` octets, a multipart upload."""
        import mmap
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return self.put(bucket, key, b"", content_type=content_type, metadata=metadata)
            with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as m:
                view = memoryview(m)
                try:
                    return self.put(bucket, key, view, content_type=content_type,
                                    metadata=metadata, multipart_threshold=multipart_threshold,
                                    part_size=part_size)
                finally:
                    view.release()

    def download_file(self, bucket: str, key: str, path: Union[str, os.PathLike]) -> Transfer:
        """Writes bucket/key to the file at ``path`` (boto3's download_file): created or
        replaced only once the whole object arrived (a temporary file beside it, renamed), so a
        failed download leaves no partial file. The object is read straight into the mapped
        file, pinned to the version HEAD saw (If-Match)."""
        import mmap
        import tempfile
        info = self.head(bucket, key)
        path = os.fspath(path)
        fd, tmp = tempfile.mkstemp(prefix=".aobj-", dir=os.path.dirname(os.path.abspath(path)))
        try:
            with os.fdopen(fd, "r+b") as f:
                if info.size == 0:
                    t = self.get_into(bucket, key, bytearray(0), if_match=info.etag)
                else:
                    f.truncate(info.size)
                    with mmap.mmap(f.fileno(), info.size, access=mmap.ACCESS_WRITE) as m:
                        view = memoryview(m)
                        try:
                            t = self.get_into(bucket, key, view, if_match=info.etag)
                        finally:
                            view.release()
                        m.flush()
            os.replace(tmp, path)
            return t
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    # ---- listings and buckets -------------------------------------------------------------------
    def list_objects(self, bucket: str, *, prefix: str = "", delimiter: str = "",
                     start_after: str = "", continuation_token: bytes = b"",
                     max_keys: int = 0) -> ListPage:
        """One page of ListObjectsV2 (max_keys 0: the server's default, 1000)."""
        d = self._list_objects(bucket, prefix, delimiter, start_after, continuation_token,
                               max_keys)
        return ListPage([ObjectSummary(o["key"], o["size"], o["etag"], o["last_modified_ms"])
                         for o in d["objects"]], list(d["common_prefixes"]), d["is_truncated"],
                        d["next_continuation_token"])

    def list(self, bucket: str, prefix: str = "", *, start_after: str = "",
             page_size: int = 0) -> Iterator[ObjectSummary]:
        """Every object under ``prefix``, in byte order of keys, page by page as it is read."""
        token = b""
        while True:
            page = self.list_objects(bucket, prefix=prefix, start_after=start_after,
                                     continuation_token=token, max_keys=page_size)
            yield from page.objects
            if not page.is_truncated:
                return
            token = page.next_continuation_token

    def list_buckets(self) -> list:
        """Every bucket, as Bucket(name, creation_time_ms), in byte order of names."""
        return [Bucket(n, t) for n, t in self._list_buckets()]

    def create_bucket(self, bucket: str) -> None:
        """aobj.BucketAlreadyExists, aobj.InvalidBucketName ..."""
        self._bucket_call("create", bucket)

    def delete_bucket(self, bucket: str) -> None:
        """Deletes an empty bucket; aobj.BucketNotEmpty otherwise."""
        self._bucket_call("delete", bucket)

    def head_bucket(self, bucket: str) -> None:
        """Returns when the bucket exists and may be used; aobj.NoSuchBucket otherwise."""
        self._bucket_call("head", bucket)

    # ---- memory -------------------------------------------------------------------------------
    def register(self, buffer: Buffer) -> Registration:
        """Registers ``buffer`` with the data channel until the Registration is released (or
        used as a context manager and left). get_into, put_from and get_many into any part of
        it then register nothing per call: a loop of small reads into a few buffers costs one
        registration each. The Registration holds a reference to ``buffer`` (a bytearray
        cannot be resized meanwhile)."""
        return self._register(buffer)

    def stats(self) -> dict:
        """registrations held, bytes of pooled staging buffers, and keys get_many read by
        GetObjects (batched_keys)."""
        return self._stats()

    # ---- batches, futures, asyncio --------------------------------------------------------------
    def get_many(self, bucket: str, keys: Sequence[str], buffers: Optional[Sequence] = None, *,
                 max_in_flight: int = 0, return_exceptions: bool = False,
                 timeout: float = 0) -> list:
        """Reads many keys at once (up to ``max_in_flight``, 0: the session's limit).

        Without ``buffers``: a list of bytes; where the server offers BATCH_GET (spec 9.16), up
        to 256 keys travel in one GetObjects request, each object of up to 64 KiB in its own
        region (a larger one is read alone). With ``buffers`` (one per key): each object is
        written into its buffer without a copy, and the list holds Transfers; buffers inside
        registrations (``register``) travel in GetObjects requests too, where BATCH_GET is
        offered, the others one GET each. A failed key
        raises its error, or, with ``return_exceptions=True``, stands in the list as its
        aobj.Error."""
        keys = list(keys)
        width = max_in_flight or self._session()["limits"]["max_in_flight"] or 16
        entries = self._get_many(bucket, keys, buffers, int(width), float(timeout))
        return _collect(entries, return_exceptions,
                        (lambda e: e[0]) if buffers is None else (lambda e: _transfer(e[1])))

    def put_many(self, bucket: str, objects, *, content_type: Optional[str] = None,
                 max_in_flight: int = 0, return_exceptions: bool = False,
                 timeout: float = 0) -> list:
        """Stores many objects at once: ``objects`` maps keys to data (bytes, bytearray,
        memoryview, numpy array, CPU tensor), or is a sequence of (key, data) pairs.

        Where the server offers BATCH_PUT (spec 9.17), up to 256 objects of up to 64 KiB each
        are copied into one pooled buffer and stored by one PutObjects request, several
        requests in flight (up to ``max_in_flight``, 0: the session's limit); each object is
        still stored on its own (a Put each, no user metadata). A larger object goes alone, as
        put() sends it. Returns one ObjectInfo per key, in order; a failed key raises its error,
        or, with ``return_exceptions=True``, stands in the list as its aobj.Error."""
        pairs = list(objects.items()) if isinstance(objects, Mapping) else [tuple(p) for p in objects]
        keys = [k for k, _ in pairs]
        datas = [d for _, d in pairs]
        width = max_in_flight or self._session()["limits"]["max_in_flight"] or 16
        entries = self._put_many(bucket, keys, datas, content_type, int(width), float(timeout))
        return _collect(entries, return_exceptions, _info)

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._executor_lock:
            if self._closed:
                raise ValueError("the client is closed")
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._workers, thread_name_prefix="aobj")
            return self._executor

    def submit_get(self, bucket: str, key: str, **kwargs) -> concurrent.futures.Future:
        """get() on the client's worker threads: a Future of the bytes."""
        return self._pool().submit(functools.partial(self.get, bucket, key, **kwargs))

    def submit_get_into(self, bucket: str, key: str, buffer: Buffer,
                        **kwargs) -> concurrent.futures.Future:
        """get_into() on the client's worker threads: a Future of the Transfer. The buffer
        must stay alive and unread until the Future is done."""
        return self._pool().submit(functools.partial(self.get_into, bucket, key, buffer,
                                                     **kwargs))

    def submit_put(self, bucket: str, key: str, data: Buffer,
                   **kwargs) -> concurrent.futures.Future:
        """put() on the client's worker threads: a Future of the Transfer. ``data`` must not
        change until the Future is done."""
        return self._pool().submit(functools.partial(self.put, bucket, key, data, **kwargs))

    async def aget(self, bucket: str, key: str, **kwargs) -> bytes:
        """get() as an awaitable (runs on the client's worker threads)."""
        return await asyncio.wrap_future(self.submit_get(bucket, key, **kwargs))

    async def aget_into(self, bucket: str, key: str, buffer: Buffer, **kwargs) -> Transfer:
        """get_into() as an awaitable."""
        return await asyncio.wrap_future(self.submit_get_into(bucket, key, buffer, **kwargs))

    async def aput(self, bucket: str, key: str, data: Buffer, **kwargs) -> Transfer:
        """put() as an awaitable."""
        return await asyncio.wrap_future(self.submit_put(bucket, key, data, **kwargs))


from . import errors  # noqa: E402  (the module, for aobj.errors.Error)

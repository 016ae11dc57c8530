"""PyTorch datasets over a bucket prefix, read with aobj.

Two shapes, as PyTorch users expect (torch.utils.data):

* ``ObjectDataset``: map-style, one item per key (listed once, when it is built); a
  ``DataLoader`` with ``shuffle=True`` and several workers reads items in any order.
* ``ObjectIterableDataset``: iterable, for streams over large prefixes; keys are listed in each
  worker and dealt out between workers, and each worker reads ``batch`` keys at once
  (``Client.get_many``), which keeps the data channel busy with small objects.

Each DataLoader worker process opens its own session (``Client(**client_kwargs)``) the first
time it reads. Workers must start by "forkserver" or "spawn", not fork(): gRPC, under the
control channel, does not survive fork() (a forked worker raises aobj.ForkError).
``aobj.datasets.DataLoader`` is torch's DataLoader with "forkserver" as its default. ``decode(key, data)`` turns an object's
bytes into a sample (a tensor, a (tensor, label) pair ...); without it a sample is the bytes.
For fixed-size samples, ``tensor_shape`` and ``dtype`` make the server write each object
straight into the sample's tensor (``Client.get_into``, no copy).

Example (examples/python/dataloader.py runs it against an aobj-server)::

    from aobj.datasets import DataLoader, ObjectDataset
    ds = ObjectDataset("datasets", "tiles/", tensor_shape=(64, 64), dtype=torch.float32,
                       client_kwargs={"endpoint": "127.0.0.1:7878"})
    for batch in DataLoader(ds, batch_size=32, num_workers=4, shuffle=True):
        ...   # batch: a float32 tensor of shape (32, 64, 64)
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import torch
import torch.utils.data
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from . import Client

__all__ = ["DataLoader", "ObjectDataset", "ObjectIterableDataset"]

Decode = Callable[[str, bytes], Any]


class DataLoader(torch.utils.data.DataLoader):
    """torch.utils.data.DataLoader whose worker processes start by "forkserver" unless
    ``multiprocessing_context`` says otherwise: aobj sessions cannot cross fork(). Everything
    else is torch's DataLoader. Objects the workers need (the dataset, ``decode``) must be
    picklable: module-level functions, not lambdas."""

    def __init__(self, dataset, *args, **kwargs) -> None:
        if kwargs.get("num_workers", 0) > 0 and kwargs.get("multiprocessing_context") is None:
            kwargs["multiprocessing_context"] = "forkserver"
        super().__init__(dataset, *args, **kwargs)


class _PerProcessClient:
    """A Client opened lazily in the process that uses it (never inherited through a fork)."""

    def __init__(self, client_kwargs: Optional[Mapping[str, Any]]) -> None:
        self.client_kwargs = dict(client_kwargs or {})
        self._client: Optional[Client] = None
        self._pid = -1

    def get(self) -> Client:
        if self._client is None or self._pid != os.getpid():
            # A client inherited through fork() is left alone: its threads did not survive.
            self._client = Client(**self.client_kwargs)
            self._pid = os.getpid()
        return self._client

    def __getstate__(self) -> dict:
        return {"client_kwargs": self.client_kwargs}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["client_kwargs"])


def _list_keys(bucket: str, prefix: str, client_kwargs: Mapping[str, Any]) -> list:
    with Client(**client_kwargs) as c:
        return [o.key for o in c.list(bucket, prefix)]


class _Reader:
    def __init__(self, bucket: str, decode: Optional[Decode], tensor_shape: Optional[Sequence[int]],
                 dtype: Optional[torch.dtype], client_kwargs: Optional[Mapping[str, Any]]) -> None:
        if tensor_shape is not None and decode is not None:
            raise ValueError("give decode or tensor_shape, not both")
        if tensor_shape is not None and dtype is None:
            raise ValueError("tensor_shape needs a dtype")
        self.bucket = bucket
        self.decode = decode
        self.tensor_shape = tuple(tensor_shape) if tensor_shape is not None else None
        self.dtype = dtype
        self.clients = _PerProcessClient(client_kwargs)

    def _empty(self) -> torch.Tensor:
        return torch.empty(self.tensor_shape, dtype=self.dtype)

    def _check(self, key: str, tensor: torch.Tensor, nbytes: int) -> torch.Tensor:
        want = tensor.numel() * tensor.element_size()
        if nbytes != want:
            raise ValueError(f"{self.bucket}/{key} holds {nbytes} octets; a tensor of shape "
                             f"{self.tensor_shape} and dtype {self.dtype} holds {want}")
        return tensor

    def read(self, key: str) -> Any:
        c = self.clients.get()
        if self.tensor_shape is not None:
            t = self._empty()
            return self._check(key, t, int(c.get_into(self.bucket, key, t)))
        data = c.get(self.bucket, key)
        return self.decode(key, data) if self.decode else data

    def read_many(self, keys: Sequence[str]) -> list:
        c = self.clients.get()
        if self.tensor_shape is not None:
            tensors = [self._empty() for _ in keys]
            moved = c.get_many(self.bucket, keys, tensors)
            return [self._check(k, t, int(m)) for k, t, m in zip(keys, tensors, moved)]
        datas = c.get_many(self.bucket, keys)
        return [self.decode(k, d) if self.decode else d for k, d in zip(keys, datas)]


class ObjectDataset(Dataset):
    """Map-style dataset: item i is the object ``keys[i]`` of ``bucket``.

    ObjectDataset(bucket, prefix="", *, keys=None, decode=None, tensor_shape=None, dtype=None,
                  client_kwargs=None)

    keys: the keys to serve; default: every key under ``prefix``, listed now.
    decode: ``decode(key, data) -> sample``; default: the bytes.
    tensor_shape, dtype: every object is exactly one tensor of this shape and dtype, written by
        the server straight into a new tensor (no copy, no decode).
    client_kwargs: arguments of ``aobj.Client`` (endpoint, profile, credentials_file ...); each
        process that reads opens its own Client with them.
    """

    def __init__(self, bucket: str, prefix: str = "", *, keys: Optional[Sequence[str]] = None,
                 decode: Optional[Decode] = None, tensor_shape: Optional[Sequence[int]] = None,
                 dtype: Optional[torch.dtype] = None,
                 client_kwargs: Optional[Mapping[str, Any]] = None) -> None:
        self.reader = _Reader(bucket, decode, tensor_shape, dtype, client_kwargs)
        self.keys = list(keys) if keys is not None else _list_keys(bucket, prefix,
                                                                     client_kwargs or {})

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, index: int) -> Any:
        return self.reader.read(self.keys[index])

    def __getitems__(self, indices: Sequence[int]) -> list:
        """A whole batch at once (DataLoader calls this where PyTorch supports it)."""
        return self.reader.read_many([self.keys[i] for i in indices])


class ObjectIterableDataset(IterableDataset):
    """Iterable dataset over every object under ``bucket``/``prefix``, in key order within each
    worker; with several DataLoader workers each key is read by exactly one of them.

    ObjectIterableDataset(bucket, prefix="", *, decode=None, tensor_shape=None, dtype=None,
                          batch=16, client_kwargs=None)

    batch: keys read at once by one worker (Client.get_many).
    The other arguments as for ObjectDataset.
    """

    def __init__(self, bucket: str, prefix: str = "", *, decode: Optional[Decode] = None,
                 tensor_shape: Optional[Sequence[int]] = None, dtype: Optional[torch.dtype] = None,
                 batch: int = 16, client_kwargs: Optional[Mapping[str, Any]] = None) -> None:
        if batch < 1:
            raise ValueError("batch must be 1 or more")
        self.bucket = bucket
        self.prefix = prefix
        self.batch = batch
        self.reader = _Reader(bucket, decode, tensor_shape, dtype, client_kwargs)

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        client = self.reader.clients.get()
        pending: list = []
        for i, summary in enumerate(client.list(self.bucket, self.prefix)):
            if i % workers != worker:
                continue
            pending.append(summary.key)
            if len(pending) == self.batch:
                yield from self.reader.read_many(pending)
                pending = []
        if pending:
            yield from self.reader.read_many(pending)

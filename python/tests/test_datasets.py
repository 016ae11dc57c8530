"""aobj.datasets with torch.utils.data.DataLoader and several worker processes (CPU torch)."""

import uuid

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.utils.data  # noqa: E402

import aobj  # noqa: E402
from aobj.datasets import DataLoader, ObjectDataset, ObjectIterableDataset  # noqa: E402


@pytest.fixture(scope="module")
def tiles(server):
    """60 float32 tiles of 16x16 under a fresh prefix; tile i holds the value i everywhere."""
    prefix = f"tiles-{uuid.uuid4().hex[:8]}/"
    with aobj.Client(**server.client_kwargs()) as c:
        for i in range(60):
            c.put("demo", f"{prefix}{i:04d}.f32", np.full((16, 16), i, dtype=np.float32))
    return prefix


def decode(key, data):
    return torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(16, 16)


@pytest.mark.parametrize("workers", [0, 2])
def test_map_style_dataset_reads_every_tile(server, tiles, workers):
    ds = ObjectDataset("demo", tiles, decode=decode, client_kwargs=server.client_kwargs())
    assert len(ds) == 60
    seen = []
    for batch in DataLoader(ds, batch_size=8, num_workers=workers, shuffle=True):
        assert batch.shape[1:] == (16, 16) and batch.dtype == torch.float32
        seen += [int(t[0, 0]) for t in batch]
        assert all(bool((t == t[0, 0]).all()) for t in batch)
    assert sorted(seen) == list(range(60))


def test_tensor_shape_reads_straight_into_tensors(server, tiles):
    ds = ObjectDataset("demo", tiles, tensor_shape=(16, 16), dtype=torch.float32,
                       client_kwargs=server.client_kwargs())
    assert int(ds[7][3, 3]) == 7
    bad = ObjectDataset("demo", tiles, tensor_shape=(8, 8), dtype=torch.float32,
                        client_kwargs=server.client_kwargs())
    with pytest.raises(aobj.DescriptorTooSmall):
        bad[0]
    loader = DataLoader(ds, batch_size=10, num_workers=2)
    assert sorted(int(t[0, 0]) for b in loader for t in b) == list(range(60))


def test_iterable_dataset_deals_each_key_to_one_worker(server, tiles):
    ds = ObjectIterableDataset("demo", tiles, tensor_shape=(16, 16), dtype=torch.float32,
                               batch=7, client_kwargs=server.client_kwargs())
    values = [int(t[0, 0]) for b in DataLoader(ds, batch_size=5, num_workers=2) for t in b]
    assert sorted(values) == list(range(60))  # every tile once, across two workers
    assert [int(t[0, 0]) for t in ds] == list(range(60))  # in key order without workers


def test_a_forked_worker_gets_a_clear_error_not_a_hang(server, tiles):
    # torch's own DataLoader forks; gRPC does not survive that, so the worker refuses at once.
    ds = ObjectDataset("demo", tiles, decode=decode, client_kwargs=server.client_kwargs())
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=1,
                                         multiprocessing_context="fork")
    with pytest.raises(aobj.ForkError, match="forkserver"):
        next(iter(loader))

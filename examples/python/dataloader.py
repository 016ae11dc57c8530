#!/usr/bin/env python3
"""A PyTorch DataLoader over an aobj bucket: copy this file and change the decode step.

Run against a server (from the repository root, after `bash scripts/build.sh`):

    printf 'AKEXAMPLE my-secret\\n' > creds && chmod 600 creds
    UCX_NET_DEVICES=lo ./build/aobj-server --credentials creds --store memory \\
        --create-bucket datasets --plaintext &
    AOBJ_CREDENTIALS_FILE=creds python3 examples/python/dataloader.py

It writes 512 small "images" (32x32 RGB, uint8, with their label in the key) under
datasets/demo-images/, then trains nothing but reads two epochs through a DataLoader with two
worker processes, each with its own aobj session, and prints what it read.
"""

import argparse
import time

import numpy as np
import torch

import aobj
from aobj.datasets import DataLoader, ObjectDataset

BUCKET, PREFIX = "datasets", "demo-images/"


def decode(key: str, data: bytes):
    """One object -> one sample: a (3, 32, 32) float tensor in [0, 1] and its label."""
    image = torch.frombuffer(bytearray(data), dtype=torch.uint8).reshape(32, 32, 3)
    label = int(key.rsplit("-label", 1)[1].split(".")[0])
    return image.permute(2, 0, 1).float() / 255.0, label


def write_samples(client: aobj.Client, count: int) -> None:
    rng = np.random.default_rng(0)
    for i in range(count):
        image = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
        client.put(BUCKET, f"{PREFIX}{i:05d}-label{i % 10}.rgb", image)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", default=None, help="HOST:PORT (default: AOBJ_ENDPOINT, "
                        "the profile's endpoint, else 127.0.0.1:7878)")
    parser.add_argument("--count", type=int, default=512)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    client_kwargs = {"endpoint": args.endpoint}  # credentials: environment or ~/.aobj

    with aobj.Client(**client_kwargs) as client:
        if sum(1 for _ in client.list(BUCKET, PREFIX)) < args.count:
            write_samples(client, args.count)

    dataset = ObjectDataset(BUCKET, PREFIX, decode=decode, client_kwargs=client_kwargs)
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=args.workers,
                        persistent_workers=True)
    for epoch in range(2):
        start, seen, label_sum = time.monotonic(), 0, 0
        for images, labels in loader:
            assert images.shape[1:] == (3, 32, 32)
            seen += len(labels)
            label_sum += int(labels.sum())
        took = time.monotonic() - start
        print(f"epoch {epoch}: {seen} samples in {took:.2f} s ({seen / took:,.0f} samples/s), "
              f"label sum {label_sum}")


if __name__ == "__main__":
    main()

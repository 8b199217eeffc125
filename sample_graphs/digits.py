"""The data the sample programs train on: sklearn's bundled 8x8 digits (no download), split
80/20 with a fixed seed, pixels scaled to [0, 1]. The programs import it the way TF1 tutorials
imported `input_data` for MNIST."""

from __future__ import annotations

import numpy as np


class DataSet:
    """One split: `images` (N, 8, 8, 1) float32, `labels` (N,) int64; `next_batch` cycles
    through a fresh permutation every epoch, as the MNIST tutorial's DataSet did."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, seed: int):
        self.images = images
        self.labels = labels
        self._rng = np.random.RandomState(seed)
        self._order = self._rng.permutation(len(images))
        self._cursor = 0

    @property
    def num_examples(self) -> int:
        return len(self.images)

    def next_batch(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        if self._cursor + batch_size > len(self._order):
            self._order = self._rng.permutation(len(self.images))
            self._cursor = 0
        idx = self._order[self._cursor:self._cursor + batch_size]
        self._cursor += batch_size
        return self.images[idx], self.labels[idx]


class Digits:
    def __init__(self, train: DataSet, test: DataSet):
        self.train = train
        self.test = test


def read_data_sets(seed: int = 0) -> Digits:
    from sklearn.datasets import load_digits
    data = load_digits()
    images = (data.images / 16.0).astype(np.float32)[..., None]
    labels = data.target.astype(np.int64)
    order = np.random.RandomState(seed).permutation(len(images))
    images, labels = images[order], labels[order]
    split = int(len(images) * 0.8)
    return Digits(DataSet(images[:split], labels[:split], seed + 1),
                  DataSet(images[split:], labels[split:], seed + 2))

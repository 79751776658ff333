"""Write the random images the ViT example trains on (`data/vit/images.npy`, `labels.npy`).

Each of the 10 classes has a fixed random pattern of 4 x 4 blocks of colour; an image is
its class's pattern (70%) with random noise (30%), as uint8 [3, 16, 16], so a classifier
can learn the classes from the pixels. `data/vit_val/` holds other images of the same
classes. Deterministic (seeded); run from anywhere:

    python examples/train/make_images.py
"""

from __future__ import annotations

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CLASSES, SHAPE = 10, (3, 16, 16)


def images(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` images (uint8 [count, 3, 16, 16]) and their classes (int32 [count])."""
    blocks = np.random.default_rng(0).uniform(0, 255, (CLASSES, SHAPE[0], 4, 4))
    patterns = blocks.repeat(SHAPE[1] // 4, axis=2).repeat(SHAPE[2] // 4, axis=3)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, count).astype(np.int32)
    noise = rng.uniform(0, 255, (count, *SHAPE))
    pixels = 0.7 * patterns[labels] + 0.3 * noise
    return np.clip(np.rint(pixels), 0, 255).astype(np.uint8), labels


def write(folder: str, count: int, seed: int) -> None:
    os.makedirs(folder, exist_ok=True)
    x, y = images(count, seed)
    np.save(os.path.join(folder, "images.npy"), x)
    np.save(os.path.join(folder, "labels.npy"), y)
    print(f"{folder}: {count} images")


def main() -> None:
    write(os.path.join(HERE, "data", "vit"), 64, 1)
    write(os.path.join(HERE, "data", "vit_val"), 16, 2)


if __name__ == "__main__":
    main()

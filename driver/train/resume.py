"""Where a training run starts, and the rule that it never writes over a checkpoint.

`resume_point(exp)` is the checkpoint a run continues from: the step folder
`exp_manager.resume_from_checkpoint` names when it names one (`is_step_folder`; a Hugging
Face model folder there starts the run from its weights instead, `prepare`), else (with
`exp_manager.resume_if_exists`) the one `checkpoints/latest` names. A `latest` that is
missing or names no checkpoint while committed step folders exist is refused
(`checkpoint_io.find_latest`): the run never starts over on top of them.

`check_saves(exp, steps)` refuses, before anything is written, a run that would save a step
whose folder holds a committed checkpoint (a manifest) or is not a folder, naming it and how
to go on. A folder without a manifest is what an interrupted save leaves (a checkpoint exists
once its manifest and `latest` are written); `set_aside_interrupted` renames such folders
to `step_N.interrupted` (`.interrupted.2`, ... when taken) before the run writes the step
again, so nothing already on disk is ever written over or deleted.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from nxcc.driver.train.checkpoint_io import (
    MANIFEST,
    Checkpoint,
    CheckpointError,
    find_latest,
    load_manifest,
    step_dir,
    step_folders,
)


def is_step_folder(folder: str) -> bool:
    """Whether `folder` is an nxcc checkpoint step folder (it holds a manifest)."""
    return os.path.isdir(folder) and os.path.lexists(os.path.join(folder, MANIFEST))


def resume_point(exp_dir: str, resume_if_exists: bool, resume_from: str | None
                 ) -> Checkpoint | None:
    """The checkpoint the run continues from (see the module docstring), or None."""
    if resume_from is not None:
        if not os.path.isdir(resume_from):
            raise CheckpointError(resume_from, "is not a checkpoint folder "
                                               "(exp_manager.resume_from_checkpoint)")
        return load_manifest(resume_from)
    return find_latest(exp_dir) if resume_if_exists else None


def saved_steps(start: int, max_steps: int, every: int | None) -> list[int]:
    """The steps a run from `start` to `max_steps` saves every `every` (None: none)."""
    if not every:
        return []
    first = (start // every + 1) * every
    return list(range(first, max_steps + 1, every))


def check_saves(exp_dir: str, steps: Iterable[int]) -> None:
    """CheckpointError for the first of `steps` whose folder holds a committed checkpoint
    or is not a folder (the run would write over it)."""
    newest = step_folders(exp_dir)[-1:]
    for step in steps:
        folder = step_dir(exp_dir, step)
        if not os.path.lexists(folder):
            continue
        if not os.path.isdir(folder) or os.path.islink(folder):
            raise CheckpointError(folder, "is not a folder, and this run saves step "
                                          f"{step} there; move it away")
        if os.path.lexists(os.path.join(folder, MANIFEST)):
            raise CheckpointError(
                folder, f"holds a checkpoint this run would write over (it saves step "
                        f"{step}): continue from the newest with ++exp_manager."
                        f"resume_from_checkpoint={newest[0][1] if newest else folder}, or "
                        "train in another exp_manager.exp_dir")


def set_aside_interrupted(exp_dir: str, steps: Iterable[int]) -> list[str]:
    """Rename the folders of `steps` left by an interrupted save (no manifest) out of the
    way; the new names."""
    moved = []
    for step in steps:
        folder = step_dir(exp_dir, step)
        if not os.path.isdir(folder) or os.path.lexists(os.path.join(folder, MANIFEST)):
            continue
        target, n = f"{folder}.interrupted", 1
        while os.path.lexists(target):
            n += 1
            target = f"{folder}.interrupted.{n}"
        os.rename(folder, target)
        moved.append(target)
    return moved

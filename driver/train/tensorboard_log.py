"""TensorBoard event files of a run (`exp_manager.create_tensorboard_logger`).

NxD Training logs through PyTorch Lightning's TensorBoard logger; nxcc writes the same
scalars, under the same names, per logged step: `reduced_train_loss` (also as `loss`),
`lr`, `gradient_norm`, `throughput` (sequences per second, NxD's unit) and
`throughput_peak`, `tokens_per_s`, `global_step`, `consumed_samples`, and `val_loss` after
each validation. The files go to `exp_dir/tensorboard/` (`tensorboard --logdir EXP_DIR`).

They are written with tensorboardX (the `tensorboard` extra: `pip install
'nxcc[tensorboard]'`): a maintained writer of TensorBoard's event format that needs only
numpy and protobuf, which nxcc already depends on, where TensorBoard's own writer comes
with TensorFlow or PyTorch. Without it the run goes on and says once that it writes no
event files.
"""

from __future__ import annotations

import importlib.util
import os

FOLDER = "tensorboard"
MISSING = ("exp_manager.create_tensorboard_logger: tensorboardX is not installed (pip "
           "install 'nxcc[tensorboard]'); this run writes no TensorBoard event files")


def available() -> bool:
    """Whether tensorboardX is installed, found without importing it (its import also
    imports torch when torch is installed, seconds a check need not spend)."""
    try:
        return importlib.util.find_spec("tensorboardX") is not None
    except (ImportError, ValueError):
        return False


class TensorBoardLog:
    """Scalars of one run in `exp_dir/tensorboard/`."""

    def __init__(self, exp_dir: str) -> None:
        from tensorboardX import SummaryWriter

        self.path = os.path.join(exp_dir, FOLDER)
        self.writer = SummaryWriter(logdir=self.path)
        self.peak = 0.0

    def step(self, step: int, loss: float, lr: float, grad_norm: float, seconds: float,
             sequences: int, tokens: int) -> None:
        """One logged step's scalars (`step` 1 for the first)."""
        throughput = sequences / seconds if seconds > 0 else 0.0
        self.peak = max(self.peak, throughput)
        for tag, value in (("reduced_train_loss", loss), ("loss", loss), ("lr", lr),
                           ("gradient_norm", grad_norm), ("throughput", throughput),
                           ("throughput_peak", self.peak),
                           ("tokens_per_s", tokens / seconds if seconds > 0 else 0.0),
                           ("global_step", float(step)),
                           ("consumed_samples", float(step * sequences))):
            self.writer.add_scalar(tag, float(value), step)

    def validation(self, step: int, val_loss: float) -> None:
        self.writer.add_scalar("val_loss", float(val_loss), step)

    def close(self) -> None:
        self.writer.flush()
        self.writer.close()

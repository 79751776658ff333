"""The training step as IR, built in one place for both ways of training.

- `loss`: a loss on an output of an imported model, the parameters it trains (the rest
  frozen back into constants) and their gradients;
- `update`: the optimizer's update with its state (slots, step counter): per parameter
  inside a whole step program (`update_parameters`), or over a flat vector of parameters
  (`build_update_module`, what `neuronx-cc train` runs after its stages' gradients);
- `program`: the whole step of `compile --training` (`build_training_step`): loss,
  gradients, clipping, schedule and update in one function whose parameters, slots and step
  counter are state (`StateSlot`), and `StepOptions`, what it computes.
`neuronx-cc train`'s stages take their loss and gradients from the model itself (the
primitives' `parallel_cross_entropy`, `nxd.pipeline`), an ONNX model's from `loss`.
"""

from nxcc.nxd.step.loss import StepError

__all__ = ["StepError"]

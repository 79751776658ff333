"""Trace a small CNN with nxcc.torch and save it as model.pt, the model the placement
examples beside this file load (each takes a 1x3x224x224 image, as the seed's examples do).

    python trace_model.py            # compiles for the instance the runtime simulates
"""

import torch

import nxcc.torch


class SmallCNN(torch.nn.Module):
    """Two strided convolutions, global average pooling and a linear classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = SmallCNN().eval()
    example = torch.rand(1, 3, 224, 224)
    trace = nxcc.torch.trace(model, example)
    nxcc.torch.save(trace, "model.pt")
    print(f"saved model.pt (traced on {', '.join(f'nc{c}' for c in trace.neuron_cores)})")

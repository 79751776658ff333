import torch
import nxcc.torch
with nxcc.torch.multicore_context():
    m0 = nxcc.torch.load('model.pt') # Loads replications to nc0-nc7
example = torch.rand(1, 3, 224, 224)
m0(example) # Executes on nc0
m0(example) # Executes on nc1

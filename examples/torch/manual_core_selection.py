import torch
import nxcc.torch
# NOTE: Order of loads does NOT matter
with nxcc.torch.neuron_cores_context(start_nc=3):
    m0 = nxcc.torch.load('model.pt') # Loads to nc3
with nxcc.torch.neuron_cores_context(start_nc=0, nc_count=2):
    m1 = nxcc.torch.load('model.pt') # Loads replicas to nc0 and nc1
example = torch.rand(1, 3, 224, 224)
m1(example) # Executes on nc0
m1(example) # Executes on nc1
m0(example) # Executes on nc3
m0(example) # Executes on nc3
m0(example) # Executes on nc3

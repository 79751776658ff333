import torch
import nxcc.torch
m0 = nxcc.torch.load('model.pt') # Loads to nc0
m1 = nxcc.torch.load('model.pt') # Loads to nc1

import torch
import nxcc.torch
m0 = nxcc.torch.load('model.pt') # Loads to nc4
m1 = nxcc.torch.load('model.pt') # Loads to nc5

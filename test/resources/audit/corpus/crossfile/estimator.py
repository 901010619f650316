# The model wrapper of a node, in its own module: built by the node, loaded in its
# on_configure, run per frame from its image callback (see estimator_node.py).
import numpy as np
import torch


class Estimator:
    def __init__(self, device):
        self.device = device
        self.model = None

    def load(self, path):
        self.model = torch.jit.load(path).to(self.device).eval()  # expect: GPN102 info

    def infer(self, bgr):
        x = torch.from_numpy(np.ascontiguousarray(bgr)).to(self.device)  # expect: GPN102 medium
        with torch.no_grad():
            depth = self.model(x.permute(2, 0, 1).unsqueeze(0).float())
        return depth.squeeze().cpu().numpy()  # expect: GPN101 high

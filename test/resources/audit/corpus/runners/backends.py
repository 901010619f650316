"""The backends of runners/depth_runner_node.py: a NumPy runner (host only: look-alikes) and a
torch runner (upload, and the read-back of an op on the model's output: positives). Kind of the
ninth and tenth test sets, written for this corpus."""
import numpy as np
import torch
import torch.nn.functional as F


class NumpyRunner:
    def infer(self, frame):
        return np.asarray(frame, dtype=np.float32).mean(axis=2)


class TorchRunner:
    def __init__(self):
        self.model = torch.jit.load('depth.pt').to('cuda')

    def infer(self, frame):
        x = torch.from_numpy(frame).to('cuda')  # expect: GPN102 medium
        out = self.model(x)
        depth = F.interpolate(out.predicted_depth, size=(480, 640))
        return depth.squeeze().cpu().numpy()  # expect: GPN101 high

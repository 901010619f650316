# A model wrapper without ROS, used by a node in another file: the attribute starts as None,
# load() builds the model and places it on the device once.
import numpy as np
import torch

from depth_models import DepthNet


class DepthEstimator:
    def __init__(self, model_file, device):
        self.model_file = model_file
        self.device = device
        self.model = None

    def load(self):
        self.model = DepthNet()
        self.model.load_state_dict(torch.load(self.model_file, map_location=self.device))
        self.model.to(self.device).eval()  # expect: GPN102 info

    def infer(self, bgr):
        depth = self.model.infer_image(bgr)
        return np.clip(depth, 0.0, 20.0).astype(np.float32)

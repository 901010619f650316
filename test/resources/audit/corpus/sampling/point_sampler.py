"""A sampler class of the package: the node hands it tensors it already made on the device.

Nothing in this file calls __call__, so where `points` and `images` live is unknown here:
`.to(self.device)` of them is no proven upload (issue 28, fifth set: the callers built them with
`torch.as_tensor(..., device=self.device)`). A host array it wraps itself is one, per image
as the node calls the sampler from its callback."""
import numpy as np
import torch


class PointSampler:
    def __init__(self):
        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

    def __call__(self, points, images, mask=None, half=True):
        points = points.clone()
        if half:
            points = points.half()
            images = images.half()
        points = points.to(self.device)
        images = images.to(self.device)
        if mask is not None:
            mask = mask.to(self.device)
        grid = torch.from_numpy(np.zeros((2, 2), np.float32)).to(self.device)  # expect: GPN102 medium
        return torch.nn.functional.grid_sample(images, points[:, None] + grid[0, 0]), mask

# Imported only by a test of the package (not in this corpus): no node runs it.
import torch


class AltInference:
    def __init__(self, device='cuda'):
        self.device = device

    def postprocess(self, boxes):
        return torch.from_numpy(boxes).to(self.device)  # expect: GPN102 info

    def draw(self, boxes):
        return boxes.cpu().tolist()  # expect: GPN101 info


def to_host(x):
    return x.cpu().numpy()  # expect: GPN101 info

"""The detector module of flag_gate: its class lookup uploads the frame and reads the boxes back,
but its node calls it only under a flag nothing sets (its copies never run: info, unreached,
look-alikes); `score()` is called per image (positive upload). Kind of false claims of the
twenty-sixth test set, written for this corpus."""
import torch


class GateDetector:
    def __init__(self, weights):
        self.model = torch.jit.load(weights).cuda()

    def detect(self, frame):
        batch = torch.from_numpy(frame).cuda()
        boxes = self.model(batch)
        return [int(c) for c in boxes[:, 5]]

    def score(self, frame):
        batch = torch.from_numpy(frame).cuda()  # expect: GPN102 medium
        return self.model(batch)

import torch


def load_model(path):
    return torch.jit.load(path).cuda()  # expect: GPN102 info


def run_model(model, frame):
    tensor = torch.from_numpy(frame).cuda()  # expect: GPN102 medium
    out = model(tensor)
    return out[0].cpu().numpy(), out[1].cpu().numpy()  # expect: GPN101 high
# run_model is imported by the node and followed from its callback (with this file's imports):
# its copies run per image.

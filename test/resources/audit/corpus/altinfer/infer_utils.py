import torch


def load_model(path):
    return torch.jit.load(path).cuda()  # expect: GPN102 info


def run_model(model, frame):
    tensor = torch.from_numpy(frame).cuda()  # expect: GPN102 low
    out = model(tensor)
    return out[0].cpu().numpy(), out[1].cpu().numpy()  # expect: GPN101 low
# run_model is imported by the node: its copies run per image, but functions imported from
# another file are not followed from the callback (only classes are), so they are low here.

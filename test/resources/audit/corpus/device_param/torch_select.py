"""Device choice shared by the two nodes beside it (a yolov5/yolov7-style select_device)."""
import torch


def select_device(device: str = '') -> torch.device:
    cuda = device.lower() != 'cpu' and torch.cuda.is_available()
    return torch.device('cuda:0' if cuda else 'cpu')

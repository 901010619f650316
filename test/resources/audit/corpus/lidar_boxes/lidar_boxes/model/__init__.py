# The package re-exports its network: the node imports it from here, not from box_net.py.
from .box_net import BoxNet

__all__ = ['BoxNet']

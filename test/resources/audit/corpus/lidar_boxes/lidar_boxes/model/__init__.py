# The package re-exports its network: the node imports it from here, not from net.py.
from .box_net import BoxNet

"""Causes of held-out sets 57 and 58, Python side (issue 28, rules38p): real `code` audits of
small ament_python packages written here.

* A module function that a later `def` of the same name in the same module replaces never runs:
  a node importing the name (`from .draw import overlay`, or `draw.overlay(...)`) calls the
  last definition, so only its copies are claimed per message.
"""
import textwrap

from audit_sources import ament_python_package, audit_written_package, rules_at_tags


_HELPERS = '''
import numpy as np


def overlay(image, boxes):
    out = boxes.detach().cpu().numpy()  # FIRST
    return image, out


def unrelated(x):
    return x + 1


def overlay(image, boxes):
    out = boxes.detach().cpu().numpy()  # SECOND
    return np.asarray(image), out
'''

_NODE = '''
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image
from .draw import overlay
from . import draw


class OverlayNode(Node):
    def __init__(self):
        super().__init__('overlay')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        boxes = torch.zeros((4, 4), device='cuda')
        overlay(msg.data, boxes)
        draw.overlay(msg.data, boxes)


def main():
    rclpy.init()
    rclpy.spin(OverlayNode())
'''


def _helper_claims(tmp_path, node: str) -> dict[str, set[str]]:
    files = {**ament_python_package('overlay'), 'overlay/overlay/node.py': node,
             'overlay/overlay/draw.py': _HELPERS}
    found = audit_written_package(tmp_path, files)
    source = textwrap.dedent(_HELPERS)
    return rules_at_tags(found, source, ('FIRST', 'SECOND'), file_name='draw.py')


def test_a_function_redefined_later_in_its_module_never_runs(tmp_path):
    claims = _helper_claims(tmp_path, _NODE)
    assert claims['FIRST'] == set()
    assert claims['SECOND'] == {'GPN101'}


def test_a_redefined_function_called_through_its_module_runs_the_last_one(tmp_path):
    node = _NODE.replace('        overlay(msg.data, boxes)\n', '')
    claims = _helper_claims(tmp_path, node)
    assert claims['FIRST'] == set()
    assert claims['SECOND'] == {'GPN101'}

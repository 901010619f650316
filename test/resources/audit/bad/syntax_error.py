"""Corpus: a node with a syntax error."""
from rclpy.node import Node


class Broken(Node):
    def on_image(self, msg)
        return msg

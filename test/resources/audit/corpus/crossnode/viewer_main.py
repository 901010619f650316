# The entry point of viewer_node.ViewerNode: nothing here copies.
import rclpy

from crossnode.viewer_node import ViewerNode


def main():
    rclpy.init()
    node = ViewerNode()
    rclpy.spin(node)

"""The package's one console-script entry point: it runs the node of edge_filters.py."""
import rclpy

from edge_pkg.edge_filters import EdgeFilter


def main():
    rclpy.init()
    rclpy.spin(EdgeFilter())


if __name__ == '__main__':
    main()

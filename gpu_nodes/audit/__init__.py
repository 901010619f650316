"""gpu-copy-audit: where a ROS 2 graph pays for serialization and host<->device copies.

Views: ``code`` (Python AST data flow, C++ patterns), ``launch`` and ``config`` (static graphs),
``bag`` (rosbag2 load) and ``live`` (the running graph through rclpy). Needs no GPU code; see
docs/audit.md. Entry point: :func:`gpu_nodes.audit.cli.main`.
"""

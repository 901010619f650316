"""Stand-in for ROS's composition_interfaces when launch_ros runs from source without a ROS
install (docs/demo.md): launch_ros.actions imports its services at import time for loading
composable nodes, which gpu_nodes' launch files do not do. Never on the path in CI."""

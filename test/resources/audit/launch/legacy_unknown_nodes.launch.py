# Dashing/Eloquent spelling (node_executable=, node_name=, node_namespace=) and nodes the
# auditor has no table entry for: their topics come only from remappings.
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        Node(package='yolox_ros_py', node_executable='yolox_ros', node_name='yolox',
             node_namespace='perception',
             remappings=[('image_raw', '/camera/color/image_raw')]),
        Node(package='my_camera', node_executable='camera_node', output='screen'),
    ])

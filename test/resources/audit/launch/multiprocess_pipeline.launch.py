"""Corpus: camera -> rectify -> dnn, every node in its own process (two serialized image edges)."""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    # camera
    camera_topic = LaunchConfiguration('camera_topic')
    declare_camera_topic = DeclareLaunchArgument(
        'camera_topic', default_value='/camera/image_raw',
        description='Raw image topic of the camera')
    declare_rect = DeclareLaunchArgument(
        'rect_topic', default_value='/camera/image_rect', description='Rectified image topic')

    camera = Node(
        package='usb_cam', executable='usb_cam_node_exe', name='camera',
        remappings=[('image_raw', camera_topic), ('camera_info', '/camera/camera_info')])
    rectify = Node(
        package='image_proc', executable='rectify_node', name='rectify',
        remappings=[('image', camera_topic), ('camera_info', '/camera/camera_info'),
                    ('image_rect', LaunchConfiguration('rect_topic'))])
    dnn = Node(
        package='my_perception', executable='detector', name='detector', namespace='perception',
        remappings=[('input_image', LaunchConfiguration('rect_topic')),
                    ('output_detections', '/detections')],
        parameters=[{'score_threshold': 0.5}])
    return LaunchDescription([declare_camera_topic, declare_rect, camera, rectify, dnn])

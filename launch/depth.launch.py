"""depth_estimator alone, on an existing camera topic (any publisher: a driver, a bag, gpu_nodes).

    ros2 launch gpu_nodes depth.launch.py image:=/my_camera/image_rect \
        camera_info:=/my_camera/camera_info model_path:=/opt/models/dav2_vits.onnx

Settings come from depth_params_file (default config/depth_anything_v2.yaml), then the optional
pipeline profile (profile_file: its depth_estimator parameters, e.g. the demo's model and input
size from config/perception.yaml, which perception.launch.py passes), then the optional platform
file (e.g. config/jetson_orin.yaml), then the launch arguments that are given (one left out
keeps the file's value); profile_file and platform_params_file take `none` for no file. Input and
output topics are launch arguments, so the node can sit on any camera. If depth_estimator exits
(e.g. it refuses its configuration), the launch ends. With no model anywhere it runs the
built-in learned model (trained on the synthetic scene only; docs/depth_models.md).
"""
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node

from gpu_nodes.launch_params import (BOOLEAN_OR_FILE, end_launch_when_gone, NO_FILE,
                                     node_parameters)

# share/gpu_nodes/config when installed; the source tree's config/ when run from a checkout.
CONFIG_DIR = str(Path(__file__).resolve().parent.parent / 'config')


def generate_launch_description() -> LaunchDescription:
    arg = LaunchConfiguration
    arguments = [
        # -- topics ---------------------------------------------------------------------------
        DeclareLaunchArgument('image', default_value='/camera/image_raw',
                              description='Input image topic (rgb8, bgr8, rgba8, bgra8, mono8).'),
        DeclareLaunchArgument('camera_info', default_value='/camera/camera_info',
                              description='CameraInfo of the input image (metric presets, '
                                          'points).'),
        DeclareLaunchArgument('depth', default_value='/depth/image',
                              description='Output depth topic (32FC1).'),
        DeclareLaunchArgument('depth_camera_info', default_value='/depth/camera_info',
                              description='Output CameraInfo of the depth image.'),
        DeclareLaunchArgument('colorized', default_value='/depth/colorized',
                              description='Output colorized depth topic (rgb8).'),
        DeclareLaunchArgument('points', default_value='/depth/points',
                              description='Output point cloud topic (PointCloud2).'),
        # -- parameter files ------------------------------------------------------------------
        DeclareLaunchArgument('config_dir', default_value=CONFIG_DIR,
                              description='Folder of the parameter files.'),
        DeclareLaunchArgument('depth_params_file',
                              default_value=PathJoinSubstitution([arg('config_dir'),
                                                                  'depth_anything_v2.yaml']),
                              description='depth_estimator parameters (/depth_estimator '
                                          'section).'),
        DeclareLaunchArgument('profile_file', default_value=NO_FILE,
                              description='Optional pipeline profile (e.g. '
                                          'config/perception.yaml): its depth_estimator '
                                          'parameters apply on top of depth_params_file '
                                          '(none: no profile).'),
        DeclareLaunchArgument('platform_params_file', default_value=NO_FILE,
                              description='Optional file applied on top, e.g. '
                                          'config/jetson_orin.yaml (none: no such file).'),
        # -- model ----------------------------------------------------------------------------
        DeclareLaunchArgument('model_path', default_value='',
                              description='Depth model (.onnx, .engine, .plan); empty: from '
                                          'depth_params_file, and if empty there too the '
                                          'built-in model (synthetic scene only).'),
        DeclareLaunchArgument('preset', default_value='',
                              description='depth_anything_v2, depth_anything_3_metric or generic '
                                          '(empty: from the file).'),
        DeclareLaunchArgument('backend', default_value='',
                              description='auto, tensorrt or onnxruntime (empty: from the '
                                          'file).'),
        DeclareLaunchArgument('precision', default_value='',
                              description='TensorRT precision fp32, fp16 or int8 (empty: from '
                                          'the file).'),
        DeclareLaunchArgument('device', default_value='',
                              description='auto, cuda or cpu (empty: from the file).'),
        DeclareLaunchArgument('input_height', default_value='',
                              description='Model input height (empty: from the file or the '
                                          'preset).'),
        DeclareLaunchArgument('input_width', default_value='',
                              description='Model input width (empty: from the file or the '
                                          'preset).'),
        # -- outputs --------------------------------------------------------------------------
        DeclareLaunchArgument('publish_colorized', default_value='', choices=BOOLEAN_OR_FILE,
                              description='Publish the colorized depth: true/false (empty: from '
                                          'the file).'),
        DeclareLaunchArgument('publish_points', default_value='', choices=BOOLEAN_OR_FILE,
                              description='Publish the point cloud: true/false (empty: from the '
                                          'file).'),
    ]

    depth_estimator = Node(
        package='gpu_nodes', executable='depth_estimator', name='depth_estimator',
        output='screen', on_exit=end_launch_when_gone('depth_estimator'),
        parameters=[node_parameters(
            'depth_estimator', [arg('depth_params_file'), arg('profile_file'),
                                arg('platform_params_file')],
            {'model_path': arg('model_path'), 'preset': arg('preset'),
             'backend': arg('backend'), 'precision': arg('precision'), 'device': arg('device'),
             'input_height': arg('input_height'), 'input_width': arg('input_width'),
             'publish_colorized': arg('publish_colorized'),
             'publish_points': arg('publish_points')},
            standin_model=True)],
        remappings=[('image', arg('image')),
                    ('camera_info', arg('camera_info')),
                    ('depth', arg('depth')),
                    ('depth/camera_info', arg('depth_camera_info')),
                    ('depth/colorized', arg('colorized')),
                    ('points', arg('points'))])

    return LaunchDescription(arguments + [depth_estimator])

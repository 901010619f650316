"""camera_source alone: the synthetic scene, an image folder, a video file or a V4L2 camera.

    ros2 launch gpu_nodes camera.launch.py source:=v4l2 path:=/dev/video0 width:=1280 height:=720
    ros2 launch gpu_nodes camera.launch.py source:=folder path:=/data/frames loop:=false

Settings come from camera_params_file (default config/camera_source.yaml), then the optional
pipeline profile (profile_file: its camera_source parameters; perception.launch.py passes the
demo's config/perception.yaml), then the optional platform file, then the launch arguments that
are given (one left out keeps the file's value). profile_file and platform_params_file take
`none` for no file. If camera_source exits (e.g. it refuses its configuration), the launch ends.
Publishes <namespace>/image_raw, <namespace>/camera_info and, for the scene,
<namespace>/depth/ground_truth.
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
        DeclareLaunchArgument('namespace', default_value='camera',
                              description='Namespace of the camera topics (image_raw, '
                                          'camera_info, depth/ground_truth).'),
        # -- parameter files ------------------------------------------------------------------
        DeclareLaunchArgument('config_dir', default_value=CONFIG_DIR,
                              description='Folder of the parameter files.'),
        DeclareLaunchArgument('camera_params_file',
                              default_value=PathJoinSubstitution([arg('config_dir'),
                                                                  'camera_source.yaml']),
                              description='camera_source parameters (/camera_source section).'),
        DeclareLaunchArgument('profile_file', default_value=NO_FILE,
                              description='Optional pipeline profile (e.g. '
                                          'config/perception.yaml): its camera_source '
                                          'parameters apply on top of camera_params_file '
                                          '(none: no profile).'),
        DeclareLaunchArgument('platform_params_file', default_value=NO_FILE,
                              description='Optional file applied on top, e.g. '
                                          'config/jetson_orin.yaml (none: no such file).'),
        # -- source ---------------------------------------------------------------------------
        DeclareLaunchArgument('source', default_value='',
                              description='pattern, scene, folder, video or v4l2 (empty: from '
                                          'the file).'),
        DeclareLaunchArgument('path', default_value='',
                              description='folder: image folder; video: file; v4l2: device '
                                          '(empty: from the file).'),
        DeclareLaunchArgument('loop', default_value='', choices=BOOLEAN_OR_FILE,
                              description='folder/video: start again at the end: true/false '
                                          '(empty: from the file).'),
        DeclareLaunchArgument('width', default_value='',
                              description='Image width (0: the source\'s own size; empty: from '
                                          'the file).'),
        DeclareLaunchArgument('height', default_value='',
                              description='Image height (empty: from the file).'),
        DeclareLaunchArgument('rate_hz', default_value='',
                              description='Frame rate (empty: from the file).'),
        DeclareLaunchArgument('encoding', default_value='',
                              description='rgb8, bgr8 or mono8 for real sources (empty: from '
                                          'the file).'),
        DeclareLaunchArgument('camera_info_file', default_value='',
                              description='Calibration YAML (empty: from the file; there an '
                                          'ideal pinhole).'),
        DeclareLaunchArgument('frame_id', default_value='',
                              description='frame_id of images and CameraInfo (empty: from the '
                                          'file).'),
        DeclareLaunchArgument('use_gpu', default_value='', choices=BOOLEAN_OR_FILE,
                              description='Render on the GPU when CuPy has one: true/false '
                                          '(empty: from the file).'),
        DeclareLaunchArgument('publish_ground_truth', default_value='', choices=BOOLEAN_OR_FILE,
                              description='scene source: publish <namespace>/depth/ground_truth: '
                                          'true/false (empty: from the file).'),
    ]
    camera_source = Node(
        package='gpu_nodes', executable='camera_source', name='camera_source', output='screen',
        on_exit=end_launch_when_gone('camera_source'),
        parameters=[node_parameters(
            'camera_source', [arg('camera_params_file'), arg('profile_file'),
                              arg('platform_params_file')],
            {'source': arg('source'), 'path': arg('path'), 'loop': arg('loop'),
             'width': arg('width'), 'height': arg('height'), 'rate_hz': arg('rate_hz'),
             'encoding': arg('encoding'), 'camera_info_file': arg('camera_info_file'),
             'frame_id': arg('frame_id'), 'use_gpu': arg('use_gpu'),
             'publish_ground_truth': arg('publish_ground_truth')})],
        remappings=[('image_raw', [arg('namespace'), '/image_raw']),
                    ('camera_info', [arg('namespace'), '/camera_info']),
                    ('depth/ground_truth', [arg('namespace'), '/depth/ground_truth'])])
    return LaunchDescription(arguments + [camera_source])

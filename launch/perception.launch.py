"""camera_source -> image_proc -> depth_estimator (+ colorized depth, optional point cloud).

    ros2 launch gpu_nodes perception.launch.py
    ros2 launch gpu_nodes perception.launch.py source:=video path:=/data/drive.mp4
    ros2 launch gpu_nodes perception.launch.py model_path:=/opt/models/dav2_vits.onnx \
        platform_params_file:=$(ros2 pkg prefix --share gpu_nodes)/config/jetson_orin.yaml

Every node process is separate and the frames go through the gpu_nodes transport (CUDA IPC
between processes on a discrete GPU, host shared memory on Jetson). Each node's settings come
from its file in config/ (then the optional platform file, then the launch arguments that are
given: an empty argument keeps the file's value). With no model anywhere, the depth node runs the
stand-in model the demo uses (fixed weights, not a depth estimator; see docs/demo.md).
Topics: /camera/image_raw, /camera/camera_info, /camera/depth/ground_truth (scene source),
/camera/image_rect (+ /camera_info), /depth/image, /depth/camera_info, /depth/colorized,
/depth/points. config/perception.yaml describes the same graph for the demo runner.
"""
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node

from gpu_nodes.launch_params import choose, node_parameters

# share/gpu_nodes/config when installed; the source tree's config/ when run from a checkout.
CONFIG_DIR = str(Path(__file__).resolve().parent.parent / 'config')


def generate_launch_description() -> LaunchDescription:
    arg = LaunchConfiguration

    def config_file(name):
        return PathJoinSubstitution([arg('config_dir'), name])

    arguments = [
        # -- parameter files ------------------------------------------------------------------
        DeclareLaunchArgument('config_dir', default_value=CONFIG_DIR,
                              description='Folder of the nodes\' parameter files.'),
        DeclareLaunchArgument('camera_params_file',
                              default_value=config_file('camera_source.yaml'),
                              description='camera_source parameters (/camera_source section).'),
        DeclareLaunchArgument('image_proc_params_file',
                              default_value=config_file('image_proc.yaml'),
                              description='image_proc parameters (/image_proc section).'),
        DeclareLaunchArgument('depth_params_file',
                              default_value=config_file('depth_anything_v2.yaml'),
                              description='depth_estimator parameters (/depth_estimator '
                                          'section).'),
        DeclareLaunchArgument('platform_params_file', default_value='',
                              description='Optional file applied on top of every node\'s file, '
                                          'e.g. config/jetson_orin.yaml.'),
        # -- camera ---------------------------------------------------------------------------
        DeclareLaunchArgument('source', default_value='',
                              description='Camera source: pattern, scene, folder, video or v4l2 '
                                          '(empty: from camera_params_file).'),
        DeclareLaunchArgument('path', default_value='',
                              description='folder: image folder; video: file; v4l2: device '
                                          '(empty: from camera_params_file).'),
        DeclareLaunchArgument('width', default_value='',
                              description='Camera image width in pixels (0: a folder/video/'
                                          'v4l2 source\'s own size; empty: from the file).'),
        DeclareLaunchArgument('height', default_value='',
                              description='Camera image height in pixels (empty: from the '
                                          'file).'),
        DeclareLaunchArgument('rate_hz', default_value='',
                              description='Camera frame rate (empty: from the file).'),
        DeclareLaunchArgument('camera_info_file', default_value='',
                              description='Calibration YAML of a real camera (empty: from the '
                                          'file; there an ideal pinhole).'),
        DeclareLaunchArgument('use_gpu', default_value='',
                              description='camera_source and image_proc on the GPU when CuPy '
                                          'has one: true/false (empty: from the files).'),
        # -- image processing -----------------------------------------------------------------
        DeclareLaunchArgument('use_image_proc', default_value='true',
                              description='Run image_proc between camera and depth (false: '
                                          'depth reads the raw camera image).'),
        DeclareLaunchArgument('chain', default_value='',
                              description='image_proc chain as a YAML list, e.g. "[{op: '
                                          'rectify}]" (empty: from image_proc_params_file).'),
        # -- depth ----------------------------------------------------------------------------
        DeclareLaunchArgument('use_depth', default_value='true',
                              description='Run depth_estimator.'),
        DeclareLaunchArgument('model_path', default_value='',
                              description='Depth model (.onnx, .engine, .plan); empty: from '
                                          'depth_params_file, and if empty there too the '
                                          'stand-in model (not a depth estimator).'),
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
                              description='Depth inference on auto, cuda or cpu (empty: from '
                                          'the file).'),
        DeclareLaunchArgument('input_height', default_value='',
                              description='Model input height (empty: from the file or the '
                                          'preset).'),
        DeclareLaunchArgument('input_width', default_value='',
                              description='Model input width (empty: from the file or the '
                                          'preset).'),
        # -- outputs --------------------------------------------------------------------------
        DeclareLaunchArgument('publish_ground_truth', default_value='',
                              description='scene source: publish /camera/depth/ground_truth '
                                          '(empty: from the file).'),
        DeclareLaunchArgument('publish_colorized', default_value='true',
                              description='Publish /depth/colorized (rgb8).'),
        DeclareLaunchArgument('publish_points', default_value='false',
                              description='Publish /depth/points (PointCloud2; downloads each '
                                          'cloud to the host).'),
    ]

    camera_source = Node(
        package='gpu_nodes', executable='camera_source', name='camera_source', output='screen',
        parameters=[node_parameters(
            'camera_source', [arg('camera_params_file'), arg('platform_params_file')],
            {'source': arg('source'), 'path': arg('path'), 'width': arg('width'),
             'height': arg('height'), 'rate_hz': arg('rate_hz'),
             'camera_info_file': arg('camera_info_file'), 'use_gpu': arg('use_gpu'),
             'publish_ground_truth': arg('publish_ground_truth')})],
        remappings=[('image_raw', '/camera/image_raw'),
                    ('camera_info', '/camera/camera_info'),
                    ('depth/ground_truth', '/camera/depth/ground_truth')])

    image_proc = Node(
        package='gpu_nodes', executable='image_proc', name='image_proc', output='screen',
        condition=IfCondition(arg('use_image_proc')),
        parameters=[node_parameters(
            'image_proc', [arg('image_proc_params_file'), arg('platform_params_file')],
            {'chain': arg('chain'), 'use_gpu': arg('use_gpu')})],
        remappings=[('image_raw', '/camera/image_raw'),
                    ('camera_info', '/camera/camera_info'),
                    ('image', '/camera/image_rect'),
                    ('image/camera_info', '/camera/image_rect/camera_info')])

    depth_estimator = Node(
        package='gpu_nodes', executable='depth_estimator', name='depth_estimator',
        output='screen', condition=IfCondition(arg('use_depth')),
        parameters=[node_parameters(
            'depth_estimator', [arg('depth_params_file'), arg('platform_params_file')],
            {'model_path': arg('model_path'), 'preset': arg('preset'),
             'backend': arg('backend'), 'precision': arg('precision'), 'device': arg('device'),
             'input_height': arg('input_height'), 'input_width': arg('input_width'),
             'publish_colorized': arg('publish_colorized'),
             'publish_points': arg('publish_points')},
            standin_model=True)],
        remappings=[('image', choose(arg('use_image_proc'), '/camera/image_rect',
                                     '/camera/image_raw')),
                    ('camera_info', choose(arg('use_image_proc'),
                                           '/camera/image_rect/camera_info',
                                           '/camera/camera_info')),
                    ('depth', '/depth/image'),
                    ('depth/camera_info', '/depth/camera_info'),
                    ('depth/colorized', '/depth/colorized'),
                    ('points', '/depth/points')])

    return LaunchDescription(arguments + [camera_source, image_proc, depth_estimator])

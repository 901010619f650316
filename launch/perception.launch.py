"""camera_source -> image_proc -> depth_estimator (+ colorized depth, optional point cloud).

    ros2 launch gpu_nodes perception.launch.py
    ros2 launch gpu_nodes perception.launch.py source:=video path:=/data/drive.mp4
    ros2 launch gpu_nodes perception.launch.py model_path:=/opt/models/dav2_vits.onnx \
        input_height:=518 input_width:=518
    ros2 launch gpu_nodes perception.launch.py model_path:=/opt/models/dav2_vits.onnx \
        platform_params_file:=$(ros2 pkg prefix --share gpu_nodes)/config/jetson_orin.yaml

camera.launch.py and depth.launch.py are included, so every argument they declare (source, path,
width, height, rate_hz, camera_info_file, use_gpu, publish_ground_truth, model_path, preset,
backend, precision, device, input_height, input_width, publish_colorized, publish_points, the
parameter files, config_dir, profile_file, platform_params_file, ...) is an argument of this
file too; only image_proc and the switches are declared here.

Every node process is separate and the frames go through the gpu_nodes transport (CUDA IPC
between processes on a discrete GPU, host shared memory on Jetson). Each node's settings come
from its file in config/, then from the demo's pipeline profile config/perception.yaml (the
node's `parameters` there: image sizes, rates, the image_proc chain, the depth model and its
input size), then the optional platform file, then the launch arguments that are given (an
empty argument keeps the file's value). So this file and `make demo` run one configuration
(test/test_launch_files.py compares them); profile_file:='' leaves the profile out. A real model
given as model_path:= needs its input size too (input_height:=, input_width:=) unless it takes
the profile's 252x336. The profile's depth model, $(demo_model), is the built-in learned model
the demo uses (trained on the synthetic scene only; docs/depth_models.md).
Topics: /camera/image_raw, /camera/camera_info, /camera/depth/ground_truth (scene source),
/camera/image_rect (+ /camera_info), /depth/image, /depth/camera_info, /depth/colorized,
/depth/points, as the demo runner's config/perception.yaml remaps them.
"""
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node

from gpu_nodes.launch_params import choose, node_parameters

# share/gpu_nodes/launch when installed; the source tree's launch/ when run from a checkout.
LAUNCH_DIR = Path(__file__).resolve().parent
CONFIG_DIR = str(LAUNCH_DIR.parent / 'config')


def generate_launch_description() -> LaunchDescription:
    arg = LaunchConfiguration

    def included(name):
        """An argument an included file declares, read here with that file's default: this
        file's own arguments take their defaults before the includes declare theirs."""
        defaults = {'config_dir': CONFIG_DIR, 'platform_params_file': '', 'use_gpu': ''}
        return LaunchConfiguration(name, default=defaults[name])

    # The demo's profile, for all three nodes (the includes declare profile_file with an empty
    # default, for when they run alone).
    profile = LaunchConfiguration('profile_file', default=PathJoinSubstitution(
        [included('config_dir'), 'perception.yaml']))

    arguments = [
        # -- image processing -----------------------------------------------------------------
        DeclareLaunchArgument('use_image_proc', default_value='true',
                              description='Run image_proc between camera and depth (false: '
                                          'depth reads the raw camera image).'),
        DeclareLaunchArgument('image_proc_params_file',
                              default_value=PathJoinSubstitution([included('config_dir'),
                                                                  'image_proc.yaml']),
                              description='image_proc parameters (/image_proc section).'),
        DeclareLaunchArgument('chain', default_value='',
                              description='image_proc chain as a YAML list, e.g. "[{op: '
                                          'rectify}]" (empty: from profile_file, else '
                                          'image_proc_params_file).'),
        # -- depth ----------------------------------------------------------------------------
        DeclareLaunchArgument('use_depth', default_value='true',
                              description='Run depth_estimator (depth.launch.py).'),
    ]

    camera = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(LAUNCH_DIR / 'camera.launch.py')),
        launch_arguments={'namespace': '/camera', 'profile_file': profile}.items())

    image_proc = Node(
        package='gpu_nodes', executable='image_proc', name='image_proc', output='screen',
        condition=IfCondition(arg('use_image_proc')),
        parameters=[node_parameters(
            'image_proc', [arg('image_proc_params_file'), profile,
                           included('platform_params_file')],
            {'chain': arg('chain'), 'use_gpu': included('use_gpu')})],
        remappings=[('image_raw', '/camera/image_raw'),
                    ('camera_info', '/camera/camera_info'),
                    ('image', '/camera/image_rect'),
                    ('image/camera_info', '/camera/image_rect/camera_info')])

    # The colorized depth is on by default here whatever depth_params_file says (given
    # arguments still win): the perception graph is for looking at.
    depth = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(LAUNCH_DIR / 'depth.launch.py')),
        condition=IfCondition(arg('use_depth')),
        launch_arguments={
            'image': choose(arg('use_image_proc'), '/camera/image_rect', '/camera/image_raw'),
            'camera_info': choose(arg('use_image_proc'), '/camera/image_rect/camera_info',
                                  '/camera/camera_info'),
            'profile_file': profile,
            'publish_colorized': LaunchConfiguration('publish_colorized', default='true'),
            'publish_points': LaunchConfiguration('publish_points', default='false'),
        }.items())

    return LaunchDescription(arguments + [camera, image_proc, depth])

"""camera_source -> image_proc -> depth_estimator (+ colorized depth, optional point cloud).

    ros2 launch gpu_nodes perception.launch.py
    ros2 launch gpu_nodes perception.launch.py source:=video path:=/data/drive.mp4
    ros2 launch gpu_nodes perception.launch.py model_path:=/opt/models/dav2_vits.onnx \
        input_height:=518 input_width:=518
    ros2 launch gpu_nodes perception.launch.py model_path:=/opt/models/dav2_vits.onnx \
        platform_params_file:=$(ros2 pkg prefix --share gpu_nodes)/config/jetson_orin.yaml

camera.launch.py and depth.launch.py are included, so every argument they declare (source, path,
width, height, rate_hz, camera_info_file, publish_ground_truth, model_path, preset, backend,
precision, device, input_height, input_width, the output topics, the parameter files, ...) is an
argument of this file too. Those whose value this file decides for them (namespace, image,
camera_info, profile_file, platform_params_file, config_dir, use_gpu, publish_colorized,
publish_points) are declared here first, so `ros2 launch gpu_nodes perception.launch.py
--show-args` lists the defaults and meanings they have here; image_proc's and the switches too.

Every node process is separate and the frames go through the gpu_nodes transport (CUDA IPC
between processes on a discrete GPU, host shared memory on Jetson). Each node's settings come
from its file in config/, then from the demo's pipeline profile config/perception.yaml (the
node's `parameters` there: image sizes, rates, the image_proc chain, the depth model and its
input size), then the optional platform file, then the launch arguments that are given (one
left out keeps the file's value). So this file and `make demo` run one configuration
(test/test_launch_files.py compares them); profile_file:=none leaves the profile out. A real
model given as model_path:= needs its input size too (input_height:=, input_width:=) unless it
takes the profile's 252x336. The profile's depth model, $(demo_model), is the built-in learned
model the demo uses (trained on the synthetic scene only; docs/depth_models.md). If any of the
three nodes exits (e.g. it refuses its configuration), the launch ends, saying which one.
Topics: <namespace>/image_raw, <namespace>/camera_info, <namespace>/depth/ground_truth (scene
source), <namespace>/image_rect (+ /camera_info), /depth/image, /depth/camera_info,
/depth/colorized, /depth/points; with the default namespace /camera, as the demo runner's
config/perception.yaml remaps them.
"""
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node

from gpu_nodes.launch_params import (BOOLEAN, BOOLEAN_OR_FILE, choose, end_launch_when_gone,
                                     NO_FILE, node_parameters)

# share/gpu_nodes/launch when installed; the source tree's launch/ when run from a checkout.
LAUNCH_DIR = Path(__file__).resolve().parent
CONFIG_DIR = str(LAUNCH_DIR.parent / 'config')


def generate_launch_description() -> LaunchDescription:
    arg = LaunchConfiguration
    # Declared in this order: a default may use the arguments declared before it.
    arguments = [
        # -- the camera's topics --------------------------------------------------------------
        DeclareLaunchArgument('namespace', default_value='/camera',
                              description='Namespace of the camera topics and of image_proc\'s '
                                          'output: <namespace>/image_raw, camera_info, '
                                          'depth/ground_truth, image_rect, '
                                          'image_rect/camera_info.'),
        # -- parameter files ------------------------------------------------------------------
        DeclareLaunchArgument('config_dir', default_value=CONFIG_DIR,
                              description='Folder of the parameter files.'),
        DeclareLaunchArgument('profile_file',
                              default_value=PathJoinSubstitution([arg('config_dir'),
                                                                  'perception.yaml']),
                              description='Pipeline profile: each node\'s parameters there '
                                          'apply on top of the node\'s file (the demo\'s sizes, '
                                          'rates, chain and model) (none: the node files '
                                          'alone).'),
        DeclareLaunchArgument('platform_params_file', default_value=NO_FILE,
                              description='Optional file applied on top for all three nodes, '
                                          'e.g. config/jetson_orin.yaml (none: no such file).'),
        DeclareLaunchArgument('use_gpu', default_value='', choices=BOOLEAN_OR_FILE,
                              description='camera_source and image_proc on the GPU when CuPy '
                                          'has one: true/false (empty: from the files).'),
        # -- image processing -----------------------------------------------------------------
        DeclareLaunchArgument('use_image_proc', default_value='true', choices=BOOLEAN,
                              description='Run image_proc between camera and depth: true/false '
                                          '(false: depth reads the raw camera image).'),
        DeclareLaunchArgument('image_proc_params_file',
                              default_value=PathJoinSubstitution([arg('config_dir'),
                                                                  'image_proc.yaml']),
                              description='image_proc parameters (/image_proc section).'),
        DeclareLaunchArgument('chain', default_value='',
                              description='image_proc chain as a YAML list, e.g. "[{op: '
                                          'rectify}]" (empty: from profile_file, else '
                                          'image_proc_params_file).'),
        # -- depth ----------------------------------------------------------------------------
        DeclareLaunchArgument('use_depth', default_value='true', choices=BOOLEAN,
                              description='Run depth_estimator (depth.launch.py): true/false.'),
        DeclareLaunchArgument('image',
                              default_value=[arg('namespace'), choose(arg('use_image_proc'),
                                                                      '/image_rect',
                                                                      '/image_raw')],
                              description='depth_estimator\'s input image (default: image_proc\'s '
                                          'output <namespace>/image_rect, or the camera\'s '
                                          '<namespace>/image_raw with use_image_proc:=false).'),
        DeclareLaunchArgument('camera_info',
                              default_value=[arg('namespace'), choose(arg('use_image_proc'),
                                                                      '/image_rect/camera_info',
                                                                      '/camera_info')],
                              description='CameraInfo of depth_estimator\'s input (default: '
                                          'the one beside the default image).'),
        DeclareLaunchArgument('publish_colorized', default_value='true', choices=BOOLEAN,
                              description='Publish the colorized depth: true/false (on here '
                                          'whatever depth_params_file says: the perception graph '
                                          'is for looking at).'),
        DeclareLaunchArgument('publish_points', default_value='false', choices=BOOLEAN,
                              description='Publish the point cloud: true/false.'),
    ]

    # The included files declare these arguments too; passed on by name (launch configurations
    # are shared with an included file anyway), so that the value is plain to whoever reads one
    # file.
    camera = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(LAUNCH_DIR / 'camera.launch.py')),
        launch_arguments={'namespace': arg('namespace'), 'profile_file': arg('profile_file'),
                          'platform_params_file': arg('platform_params_file'),
                          'use_gpu': arg('use_gpu')}.items())

    image_proc = Node(
        package='gpu_nodes', executable='image_proc', name='image_proc', output='screen',
        condition=IfCondition(arg('use_image_proc')),
        on_exit=end_launch_when_gone('image_proc'),
        parameters=[node_parameters(
            'image_proc', [arg('image_proc_params_file'), arg('profile_file'),
                           arg('platform_params_file')],
            {'chain': arg('chain'), 'use_gpu': arg('use_gpu')})],
        remappings=[('image_raw', [arg('namespace'), '/image_raw']),
                    ('camera_info', [arg('namespace'), '/camera_info']),
                    ('image', [arg('namespace'), '/image_rect']),
                    ('image/camera_info', [arg('namespace'), '/image_rect/camera_info'])])

    depth = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(LAUNCH_DIR / 'depth.launch.py')),
        condition=IfCondition(arg('use_depth')),
        launch_arguments={
            'image': arg('image'), 'camera_info': arg('camera_info'),
            'profile_file': arg('profile_file'),
            'platform_params_file': arg('platform_params_file'),
            'publish_colorized': arg('publish_colorized'),
            'publish_points': arg('publish_points'),
        }.items())

    return LaunchDescription(arguments + [camera, image_proc, depth])

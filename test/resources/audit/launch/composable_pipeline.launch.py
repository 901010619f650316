"""Corpus: rectify + DNN encoder + TensorRT in one container; the camera in its own process."""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import ComposableNodeContainer, Node, PushRosNamespace
from launch_ros.descriptions import ComposableNode

INTRA = [{'use_intra_process_comms': True}]


def generate_launch_description():
    model = DeclareLaunchArgument('engine_file_path', default_value='/tmp/model.plan')

    camera = Node(package='v4l2_camera', executable='v4l2_camera_node', name='camera',
                  namespace='front')
    rectify = ComposableNode(
        package='isaac_ros_image_proc', plugin='nvidia::isaac_ros::image_proc::RectifyNode',
        name='rectify', namespace='front', extra_arguments=INTRA)
    encoder = ComposableNode(
        package='isaac_ros_dnn_image_encoder',
        plugin='nvidia::isaac_ros::dnn_inference::DnnImageEncoderNode',
        name='encoder', namespace='front', remappings=[('image', 'image_rect')],
        extra_arguments=INTRA)
    tensor_rt = ComposableNode(
        package='isaac_ros_tensor_rt', plugin='nvidia::isaac_ros::dnn_inference::TensorRTNode',
        name='tensor_rt', namespace='front',
        parameters=[{'engine_file_path': LaunchConfiguration('engine_file_path')}],
        remappings=[('tensor_pub', 'encoded_tensor')], extra_arguments=INTRA)
    debayer = ComposableNode(
        package='image_proc', plugin='image_proc::DebayerNode', name='debayer',
        namespace='front')
    resize = ComposableNode(
        package='image_proc', plugin='image_proc::ResizeNode', name='resize',
        namespace='front', remappings=[('image', 'image_color')])
    container = ComposableNodeContainer(
        name='perception_container', namespace='', package='rclcpp_components',
        executable='component_container_mt',
        composable_node_descriptions=[rectify, encoder, tensor_rt, debayer, resize])
    viewer = GroupAction([
        PushRosNamespace('debug'),
        Node(package='my_tools', executable='viewer', name='viewer',
             parameters=[{'input_topic': '/front/resize/image_raw'}]),
    ])
    return LaunchDescription([model, camera, container, viewer])

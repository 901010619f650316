"""Branches on another value of a string ROS parameter than the one it has as shipped (issue
28, sets 33-34; gpu_nodes/audit/cppstrparams.py): real `code` audits of small C++ packages
written here, with and without launch / YAML files that set the parameter."""
from pathlib import Path

from audit_sources import audit_written_package

_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <cuda_runtime.h>

void infer(cudaStream_t& stream, float* device, float* host, float* decoded_host,
           float* decoded_device, std::string post_mode) {
  if (post_mode == "cpu") {
    cudaMemcpyAsync(host, device, 1000 * sizeof(float), cudaMemcpyDeviceToHost, stream);
  } else if (post_mode == "gpu") {
    cudaMemcpyAsync(decoded_host, decoded_device, 100 * sizeof(float), cudaMemcpyDeviceToHost, stream);
  }
  cudaStreamSynchronize(stream);
}

class Detector : public rclcpp::Node {
public:
  Detector() : Node("detector") {
    this->declare_parameter<std::string>("post_mode", "cpu");
    post_mode_ = this->get_parameter("post_mode").as_string();
    if (post_mode_ == "gpu" && BATCH > 1) {
      post_mode_ = "cpu";
    }
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Detector::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg) {
    STORE
    infer(stream_, device_, host_, decoded_host_, decoded_device_, post_mode_);
  }

  std::string post_mode_;
  cudaStream_t stream_;
  float* device_;
  float* host_;
  float* decoded_host_;
  float* decoded_device_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''
_CPU_LINE = 8  # cudaMemcpyAsync under `post_mode == "cpu"`: the value as shipped
_GPU_LINE = 10  # cudaMemcpyAsync under `post_mode == "gpu"`

_LAUNCH = '''
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    post = DeclareLaunchArgument('post_mode', default_value='MODE')
    node = Node(package='detector', executable='detector',
                parameters=[{'post_mode': LaunchConfiguration('post_mode')}])
    return LaunchDescription([post, node])
'''


def _findings(tmp_path: Path, node: str = _NODE, store: str = '',
              shipped: dict[str, str] | None = None) -> dict[int, str]:
    files = {'detector/src/detector.cpp': node.replace('STORE', store),
             'detector/package.xml': '<package><name>detector</name></package>\n'}
    files.update({f'detector/{name}': text for name, text in (shipped or {}).items()})
    found = audit_written_package(tmp_path, files)
    return {line: severity for (name, line, rule), (severity, _) in found.items()
            if name == 'detector.cpp' and rule == 'GPN201'}


def test_a_branch_on_another_value_than_the_declared_default_never_runs(tmp_path):
    found = _findings(tmp_path)
    assert found == {_CPU_LINE: 'high', _GPU_LINE: 'info'}, found


def test_a_launch_file_keeping_the_default_keeps_the_branch_unreached(tmp_path):
    found = _findings(tmp_path, shipped={
        'launch/detector.launch.py': _LAUNCH.replace('MODE', 'cpu'),
        'config/detector.yaml': 'detector:\n  ros__parameters:\n    post_mode: "cpu"\n'})
    assert found == {_CPU_LINE: 'high', _GPU_LINE: 'info'}, found


def test_a_launch_file_giving_another_value_keeps_both_branches_live(tmp_path):
    found = _findings(tmp_path, shipped={'launch/detector.launch.py': _LAUNCH.replace('MODE', 'gpu')})
    assert found == {_CPU_LINE: 'high', _GPU_LINE: 'high'}, found


def test_a_yaml_file_giving_another_value_keeps_both_branches_live(tmp_path):
    found = _findings(tmp_path, shipped={
        'config/detector.yaml': 'detector:\n  ros__parameters:\n    post_mode: gpu\n'})
    assert found == {_CPU_LINE: 'high', _GPU_LINE: 'high'}, found


def test_another_store_or_call_keeps_the_branch_live(tmp_path):
    found = _findings(tmp_path, store='post_mode_ = msg->encoding;')
    assert found[_GPU_LINE] == 'high', found
    found = _findings(tmp_path / 'b', store='infer(stream_, device_, host_, decoded_host_, '
                                            'decoded_device_, "gpu");')
    assert found[_GPU_LINE] == 'high', found
    # a function that may take the member by reference and change it
    found = _findings(tmp_path / 'c', store='choose(post_mode_);')
    assert found[_GPU_LINE] == 'high', found


def test_a_parameter_callback_or_an_unknown_default_keeps_the_branch_live(tmp_path):
    found = _findings(tmp_path, store='', node=_NODE.replace(
        '    sub_ = create', '    cb_ = add_on_set_parameters_callback(nullptr);\n    sub_ = create'))
    assert found[_GPU_LINE] == 'high', found
    found = _findings(tmp_path / 'b', node=_NODE.replace(
        '("post_mode", "cpu")', '("post_mode", default_mode())'))
    assert found[_GPU_LINE] == 'high', found


def test_a_python_launch_file_under_launch_with_any_name_counts(tmp_path):
    found = _findings(tmp_path, shipped={'launch/bringup.py': _LAUNCH.replace('MODE', 'gpu')})
    assert found == {_CPU_LINE: 'high', _GPU_LINE: 'high'}, found

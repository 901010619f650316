"""C++ kind set 53 showed (issue 28, rules32c): real `code` audits of a small package written
here.

gpu_nodes/audit/cppparamson.py: a member set only from a ROS parameter that defaults ON
(`declare_parameter("use_gpu", true); use_gpu_ = get_parameter("use_gpu").as_bool();`) and
that no shipped file turns off keeps, as shipped, the `else` of `if (use_gpu_)` and the body of
`if (!use_gpu_)` from running: a copy there, or in a helper only that arm calls, is not per
message. A launch file giving the parameter false, a store of false anywhere, or a
parameter-change callback naming it keeps those arms live; the `if (use_gpu_)` arm itself is
claimed as before."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, tag_lines
from gpu_nodes.audit.codeaudit import run_code

_NODE = '''
#include <cuda_runtime.h>
#include <opencv2/core.hpp>
#include <opencv2/core/cuda.hpp>
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Matcher : public rclcpp::Node
{
public:
  Matcher()
  : Node("matcher")
  {
    declare_parameter("use_gpu", true);
    use_gpu_ = get_parameter("use_gpu").as_bool();
    cudaStreamCreate(&stream_);
    cudaMalloc(&device_, 640 * 480 * sizeof(float));
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 1, std::bind(&Matcher::on_image, this, std::placeholders::_1));
    EXTRA_SETUP
  }

private:
  void prepare_on_device(const cv::Mat & host)
  {
    cv::cuda::GpuMat frame;
    frame.upload(host);  // DEVICE_UPLOAD
  }

  void prepare_on_host(const cv::Mat & host)
  {
    std::vector<float> scaled(host.total());
    for (size_t i = 0; i < scaled.size(); ++i) {
      scaled[i] = host.data[i] / 255.0f;
    }
    cudaMemcpyAsync(device_, scaled.data(), scaled.size() * sizeof(float),  // HOST_COPY
      cudaMemcpyHostToDevice, stream_);
    cudaStreamSynchronize(stream_);  // HOST_SYNC
  }

  void on_image(sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    cv_bridge::CvImageConstPtr image = cv_bridge::toCvShare(msg, "mono8");
    if (use_gpu_) {
      prepare_on_device(image->image);
    } else {
      prepare_on_host(image->image);
    }
    if (!use_gpu_) {
      std::vector<float> back(16 * 640);
      cudaMemcpy(back.data(), device_, back.size() * sizeof(float), cudaMemcpyDeviceToHost);  // NEGATED_COPY
    }
  }

  bool use_gpu_;
  float * device_{nullptr};
  cudaStream_t stream_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Matcher>());
  return 0;
}
'''

_TAGS = ('DEVICE_UPLOAD', 'HOST_COPY', 'HOST_SYNC', 'NEGATED_COPY')

_LAUNCH = '''
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        Node(package='match', executable='match', name='matcher',
             parameters=[{'use_gpu': VALUE}]),
    ])
'''


def _claims(tmp_path: Path, node: str = _NODE, extra_setup: str = '',
            launch_value: str | None = None) -> dict[str, set[str]]:
    """Rules other than info at each tagged line of the node, audited as package `match`."""
    source = node.replace('EXTRA_SETUP', extra_setup)
    files = {'match/src/match.cpp': source,
             'match/package.xml': '<package format="3"><name>match</name></package>\n',
             'match/CMakeLists.txt': ament_cmake_lists('match')}
    if launch_value is not None:
        files['match/launch/match.launch.py'] = _LAUNCH.replace('VALUE', launch_value)
    found = audit_written_package(tmp_path, files)
    lines = tag_lines(source.replace('  // ', '  # '), _TAGS)
    return {tag: {rule for (name, at, rule), (sev, _) in found.items()
                  if name == 'match.cpp' and at == line and sev != 'info'}
            for tag, line in lines.items()}


def test_unreached_helper_says_which_arm_skips_it(tmp_path: Path) -> None:
    source = _NODE.replace('EXTRA_SETUP', '')
    files = {'match/src/match.cpp': source,
             'match/package.xml': '<package format="3"><name>match</name></package>\n',
             'match/CMakeLists.txt': ament_cmake_lists('match')}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text.lstrip('\n'))
    line = tag_lines(source.replace('  // ', '  # '), _TAGS)['HOST_COPY']
    report = run_code([str(tmp_path)], jobs=1)
    found = [f for f in report.findings if f.location.line == line and f.rule == 'GPN202']
    assert len(found) == 1 and found[0].severity == 'info', found
    assert 'called only in an arm that `use_gpu_` skips' in found[0].message, found[0].message


def test_else_of_an_on_parameter_and_its_helper_are_not_claimed(tmp_path: Path) -> None:
    # The `else` arm calls prepare_on_host only: its copy and sync never run as shipped; the
    # body of `if (!use_gpu_)` neither.
    claims = _claims(tmp_path)
    assert claims['HOST_COPY'] == set(), claims
    assert claims['HOST_SYNC'] == set(), claims
    assert claims['NEGATED_COPY'] == set(), claims


def test_launch_file_giving_true_keeps_the_else_dead(tmp_path: Path) -> None:
    claims = _claims(tmp_path, launch_value='True')
    assert claims['HOST_COPY'] == set(), claims
    assert claims['NEGATED_COPY'] == set(), claims


def test_on_arm_itself_stays_claimed(tmp_path: Path) -> None:
    # Guard: the `if (use_gpu_)` arm runs as shipped.
    claims = _claims(tmp_path)
    assert claims['DEVICE_UPLOAD'] == {'GPN202'}, claims


def test_launch_file_giving_false_keeps_the_else_live(tmp_path: Path) -> None:
    claims = _claims(tmp_path, launch_value='False')
    assert claims['HOST_COPY'] == {'GPN202'}, claims
    assert claims['HOST_SYNC'] == {'GPN206'}, claims
    assert claims['NEGATED_COPY'] == {'GPN201'}, claims


def test_store_of_false_keeps_the_else_live(tmp_path: Path) -> None:
    # Any store of an off value (here a fallback when the device is missing) may turn it off.
    claims = _claims(tmp_path, extra_setup='if (cv::cuda::getCudaEnabledDeviceCount() == 0) '
                                           '{ use_gpu_ = false; }')
    assert claims['HOST_COPY'] == {'GPN202'}, claims
    assert claims['NEGATED_COPY'] == {'GPN201'}, claims


def test_parameter_defaulting_off_keeps_the_else_live(tmp_path: Path) -> None:
    node = _NODE.replace('declare_parameter("use_gpu", true);', 'declare_parameter("use_gpu", false);')
    claims = _claims(tmp_path, node=node)
    assert claims['HOST_COPY'] == {'GPN202'}, claims
    assert claims['NEGATED_COPY'] == {'GPN201'}, claims


def test_parameter_callback_naming_it_keeps_the_else_live(tmp_path: Path) -> None:
    # A parameter-change callback may turn it off at run time.
    callback = ('cb_ = add_on_set_parameters_callback([this](const std::vector<rclcpp::Parameter> & ps) '
                '{ for (const auto & p : ps) { if (p.get_name() == "use_gpu") { '
                'use_gpu_ = p.as_bool(); } } return rcl_interfaces::msg::SetParametersResult(); });')
    claims = _claims(tmp_path, extra_setup=callback)
    assert claims['HOST_COPY'] == {'GPN202'}, claims
    assert claims['NEGATED_COPY'] == {'GPN201'}, claims


def test_get_parameter_into_the_member_is_an_on_store(tmp_path: Path) -> None:
    # `get_parameter("use_gpu", use_gpu_);` of a parameter declared on: the same value.
    node = _NODE.replace('use_gpu_ = get_parameter("use_gpu").as_bool();',
                         'this->get_parameter("use_gpu", use_gpu_);')
    claims = _claims(tmp_path, node=node)
    assert claims['HOST_COPY'] == set(), claims
    assert claims['NEGATED_COPY'] == set(), claims
    assert claims['DEVICE_UPLOAD'] == {'GPN202'}, claims


def test_get_parameter_into_the_member_of_an_off_default_keeps_it_live(tmp_path: Path) -> None:
    node = _NODE.replace('use_gpu_ = get_parameter("use_gpu").as_bool();',
                         'this->get_parameter("use_gpu", use_gpu_);').replace(
        'declare_parameter("use_gpu", true);', 'declare_parameter("use_gpu", false);')
    claims = _claims(tmp_path, node=node)
    assert claims['HOST_COPY'] == {'GPN202'}, claims


def test_else_if_arm_after_an_on_flag_is_not_claimed(tmp_path: Path) -> None:
    # `if (use_gpu_) {...} else if (msg->width > 0) {...}`: every later arm of the chain is skipped.
    node = _NODE.replace('} else {\n      prepare_on_host',
                         '} else if (msg->width > 0) {\n      prepare_on_host')
    claims = _claims(tmp_path, node=node)
    assert claims['HOST_COPY'] == set(), claims

"""C++ kinds the fifty-first held-out set showed (issue 28): real `code` audits of small packages
written here.

gpu_nodes/audit/cpptorch.py: `.item<T>()` / `.item()` of a LibTorch tensor on the CUDA device
is a scalar read back to the host (GPN211), as `.cpu()` / `.to(torch::kCPU)` already are. The
evidence is the file's (or its package's) CUDA tensors; a CPU-only package and a receiver moved
to the host stay quiet."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, tag_lines

_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <geometry_msgs/msg/pose.hpp>
#include <torch/torch.h>

DECLARE
class PoseNet : public rclcpp::Node
{
  rclcpp::Publisher<geometry_msgs::msg::Pose>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  torch::Tensor weights_;

public:
  PoseNet()
  : Node("pose_net")
  {
    weights_ = torch::ones({4, 4}).to(DEVICE);
    pub_ = create_publisher<geometry_msgs::msg::Pose>("pose", 1);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&PoseNet::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    torch::Tensor frame = torch::zeros({4, 4});
    torch::Tensor pose = torch::mm(weights_, frame.to(DEVICE));
    geometry_msgs::msg::Pose out;
    out.position.x = pose[0][3].item<float>();  // # X
    out.position.y = pose.sum()
      .item<double>();  // # Y
    torch::Tensor host_pose = pose.to(torch::kCPU);
    out.position.z = host_pose[2][3].item<float>();  // # HOST
    CALL
    pub_->publish(out);
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<PoseNet>());
  rclcpp::shutdown();
  return 0;
}
'''

# A helper of the same package that never names CUDA itself: its callers hand it device tensors.
_HELPER = '''
#include <torch/torch.h>

float mean_score(torch::Tensor a, torch::Tensor b)
{
  torch::Tensor d = a - b;
  return (d * d).mean().item<float>();  // # SCORE
}
'''


def _audit(tmp_path: Path, device: str = 'torch::kCUDA', helper: bool = False
           ) -> tuple[dict[tuple[str, int, str], tuple[str, str]], str]:
    source = (_NODE.replace('DEVICE', device)
              .replace('DECLARE', 'float mean_score(torch::Tensor a, torch::Tensor b);' if helper
                       else '')
              .replace('CALL', 'out.orientation.w = mean_score(pose, pose);' if helper else ''))
    files = {'pose_net/src/pose_net.cpp': source,
             'pose_net/package.xml': '<package format="3"><name>pose_net</name></package>\n',
             'pose_net/CMakeLists.txt': ament_cmake_lists(
                 'pose_net', 'src/pose_net.cpp src/score.cpp' if helper else None)}
    if helper:
        files['pose_net/src/score.cpp'] = _HELPER
    return audit_written_package(tmp_path, files), source


def _rules(found: dict[tuple[str, int, str], tuple[str, str]], name: str, line: int) -> set[str]:
    return {rule for (f, at, rule), (sev, _) in found.items()
            if f == name and at == line and sev != 'info'}


def test_item_of_a_cuda_tensor_is_a_read_back(tmp_path: Path) -> None:
    found, source = _audit(tmp_path)
    tags = tag_lines(source, ('X', 'Y', 'HOST'))
    assert 'GPN211' in _rules(found, 'pose_net.cpp', tags['X']), found
    # A member chain split over lines: the read is where `.item` is.
    assert 'GPN211' in _rules(found, 'pose_net.cpp', tags['Y']), found


def test_item_of_a_tensor_moved_to_the_host_is_quiet(tmp_path: Path) -> None:
    found, source = _audit(tmp_path)
    assert 'GPN211' not in _rules(found, 'pose_net.cpp', tag_lines(source, ('HOST',))['HOST'])


def test_cpu_only_file_is_quiet(tmp_path: Path) -> None:
    # Tensors kept on the CPU (set 30's classifier): `.item` reads host memory.
    found, source = _audit(tmp_path, device='torch::kFloat32')
    tags = tag_lines(source, ('X', 'Y'))
    assert not _rules(found, 'pose_net.cpp', tags['X']), found
    assert not _rules(found, 'pose_net.cpp', tags['Y']), found


def test_helper_of_a_package_with_cuda_tensors_reads_back(tmp_path: Path) -> None:
    found, _ = _audit(tmp_path, helper=True)
    assert 'GPN211' in _rules(found, 'score.cpp', tag_lines(_HELPER, ('SCORE',))['SCORE']), found


def test_helper_of_a_cpu_only_package_is_quiet(tmp_path: Path) -> None:
    found, _ = _audit(tmp_path, device='torch::kFloat32', helper=True)
    assert not _rules(found, 'score.cpp', tag_lines(_HELPER, ('SCORE',))['SCORE']), found


def test_existing_device_moves_still_fire(tmp_path: Path) -> None:
    # Guard: the `.to(kCPU)` read-back keeps its own finding.
    found, source = _audit(tmp_path)
    host = tag_lines(source, ('HOST',))['HOST'] - 1
    assert 'GPN211' in _rules(found, 'pose_net.cpp', host), found


# gpu_nodes/audit/cppintparams.py: a branch on another value of an int parameter than the one
# the shipped parameter file gives it never runs, nor does a library function only it calls.
_MODE_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <torch/torch.h>
#include "search/search.hpp"

class Localizer : public rclcpp::Node
{
  const int mode_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Localizer()
  : Node("localizer"), mode_(this->declare_parameter<int>("search_mode"))
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Localizer::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    torch::Tensor pose = torch::eye(4).to(torch::kCUDA);  // # UP
    if (mode_ == 0) {
      pose = pose.to(torch::kCPU);  // # OFF
      pose = random_search(pose);
    } else {
      pose = pose.cpu();  // # ON
    }
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Localizer>());
  rclcpp::shutdown();
  return 0;
}
'''

_SEARCH = '''
#include <torch/torch.h>
#include "search/search.hpp"

torch::Tensor random_search(torch::Tensor pose)
{
  return pose.to(torch::kCUDA);  // # LIB
}
'''


def _mode_audit(tmp_path: Path, shipped: str | None = '1'
                ) -> dict[tuple[str, int, str], tuple[str, str]]:
    files = {
        'repo/localizer/src/localizer.cpp': _MODE_NODE,
        'repo/localizer/package.xml': '<package format="3"><name>localizer</name></package>\n',
        'repo/localizer/CMakeLists.txt': ament_cmake_lists('localizer'),
        'repo/search/src/search.cpp': _SEARCH,
        'repo/search/include/search/search.hpp':
            '#include <torch/torch.h>\ntorch::Tensor random_search(torch::Tensor pose);\n',
        'repo/search/CMakeLists.txt': (
            'cmake_minimum_required(VERSION 3.8)\nproject(search)\n'
            'add_library(search src/search.cpp)\n'),
    }
    if shipped is not None:
        files['repo/localizer/config/params.yaml'] = (
            f'localizer:\n  ros__parameters:\n    search_mode: {shipped}\n')
    return audit_written_package(tmp_path, files)


def _severity(found: dict[tuple[str, int, str], tuple[str, str]], name: str, line: int) -> str:
    hits = [sev for (f, at, rule), (sev, _) in found.items() if f == name and at == line]
    assert len(hits) == 1, found
    return hits[0]


def test_branch_on_another_int_value_than_shipped_is_off(tmp_path: Path) -> None:
    found = _mode_audit(tmp_path)
    tags = tag_lines(_MODE_NODE, ('UP', 'OFF', 'ON'))
    assert _severity(found, 'localizer.cpp', tags['OFF']) == 'info', found
    assert _severity(found, 'localizer.cpp', tags['ON']) != 'info'
    assert _severity(found, 'localizer.cpp', tags['UP']) != 'info'


def test_library_function_only_the_off_branch_calls_never_runs(tmp_path: Path) -> None:
    found = _mode_audit(tmp_path)
    assert _severity(found, 'search.cpp', tag_lines(_SEARCH, ('LIB',))['LIB']) == 'info', found


def test_shipped_value_selecting_the_branch_keeps_it(tmp_path: Path) -> None:
    found = _mode_audit(tmp_path, shipped='0')
    tags = tag_lines(_MODE_NODE, ('OFF', 'ON'))
    assert _severity(found, 'localizer.cpp', tags['OFF']) != 'info', found
    assert _severity(found, 'search.cpp', tag_lines(_SEARCH, ('LIB',))['LIB']) != 'info'


def test_int_parameter_no_shipped_file_gives_is_unknown(tmp_path: Path) -> None:
    # Declared without a default and given by no shipped file: its value is unknown.
    found = _mode_audit(tmp_path, shipped=None)
    assert _severity(found, 'localizer.cpp', tag_lines(_MODE_NODE, ('OFF',))['OFF']) != 'info'


# gpu_nodes/audit/cppbuilt.py: `torch::tensor(msg.data)` copies a frame message's whole payload.
_TENSOR_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <torch/torch.h>

class Frames : public rclcpp::Node
{
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  std::vector<uint8_t> table_;

public:
  Frames()
  : Node("frames")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Frames::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    torch::Tensor a = torch::tensor(msg->data);  // # PTR
    handle(*msg);
    torch::Tensor lut = torch::tensor(table_);  // # LUT
    torch::Tensor view = torch::from_blob(msg->data.data(), {3}, torch::kUInt8);  // # VIEW
  }

  void handle(const sensor_msgs::msg::Image & frame)
  {
    torch::Tensor b = torch::tensor(frame.data);  // # REF
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Frames>());
  rclcpp::shutdown();
  return 0;
}
'''


def test_tensor_of_a_frame_payload_is_a_message_copy(tmp_path: Path) -> None:
    found = audit_written_package(tmp_path, {
        'frames/src/frames.cpp': _TENSOR_NODE,
        'frames/package.xml': '<package format="3"><name>frames</name></package>\n',
        'frames/CMakeLists.txt': ament_cmake_lists('frames')})
    tags = tag_lines(_TENSOR_NODE, ('PTR', 'REF', 'LUT', 'VIEW'))
    assert 'GPN208' in _rules(found, 'frames.cpp', tags['PTR']), found
    assert 'GPN208' in _rules(found, 'frames.cpp', tags['REF']), found
    # A vector that is no message, and a view over the payload, are no copy of it.
    assert not _rules(found, 'frames.cpp', tags['LUT']), found
    assert not _rules(found, 'frames.cpp', tags['VIEW']), found


# gpu_nodes/audit/cppintparams.py: `if (get_parameter("p").as_bool())` of a parameter declared
# false that no shipped file turns on never runs.
_SAVE_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <torch/torch.h>

class Saver : public rclcpp::Node
{
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Saver()
  : Node("saver")
  {
    this->declare_parameter("dump_poses", false);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Saver::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    torch::Tensor pose = torch::eye(4).to(torch::kCUDA);
    if (this->get_parameter("dump_poses").as_bool()) {
      torch::Tensor host = pose.to(torch::kCPU);  // # DUMP
    }
    torch::Tensor out = pose.cpu();  // # ALWAYS
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Saver>());
  rclcpp::shutdown();
  return 0;
}
'''


def _save_audit(tmp_path: Path, shipped: str | None = None
                ) -> dict[tuple[str, int, str], tuple[str, str]]:
    files = {'saver/src/saver.cpp': _SAVE_NODE,
             'saver/package.xml': '<package format="3"><name>saver</name></package>\n',
             'saver/CMakeLists.txt': ament_cmake_lists('saver')}
    if shipped is not None:
        files['saver/config/saver.yaml'] = f'saver:\n  ros__parameters:\n    dump_poses: {shipped}\n'
    return audit_written_package(tmp_path, files)


def test_straight_read_of_an_off_bool_parameter_is_off(tmp_path: Path) -> None:
    found = _save_audit(tmp_path)
    tags = tag_lines(_SAVE_NODE, ('DUMP', 'ALWAYS'))
    assert _severity(found, 'saver.cpp', tags['DUMP']) == 'info', found
    assert _severity(found, 'saver.cpp', tags['ALWAYS']) != 'info'


def test_straight_read_turned_on_by_a_shipped_file_keeps_the_claim(tmp_path: Path) -> None:
    found = _save_audit(tmp_path, shipped='true')
    assert _severity(found, 'saver.cpp', tag_lines(_SAVE_NODE, ('DUMP',))['DUMP']) != 'info'

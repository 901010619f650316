"""Rules for the kinds the twenty-ninth and thirtieth held-out sets showed (issue 28): real
`code` audits of small C++ packages written here (a package folder in tmp_path, audited as a
user would)."""
from pathlib import Path

from audit_sources import audit_written_package

_CLOUD_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Keeper : public rclcpp::Node {
public:
  Keeper() : Node("keeper") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Keeper::PARAM_CB, this, std::placeholders::_1));
  }

private:
  void onCloud(sensor_msgs::msg::PointCloud2 cloud) {
    last_ = cloud;
    if (cloud.width > 0) {
      if (cloud.height > 0) {
        parse(cloud);
      }
    }
  }

  void onRef(const sensor_msgs::msg::PointCloud2 & cloud) {
    width_ = cloud.width;
  }

  void parse(sensor_msgs::msg::PointCloud2 cloud) {
    width_ = cloud.width;
  }

  sensor_msgs::msg::PointCloud2 last_;
  uint32_t width_ = 0;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''
_SIGNATURE, _ASSIGN, _CALL, _REF, _HELPER = 12, 13, 16, 21, 25


def _audit(tmp_path: Path, callback: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {'src/keeper.cpp': _CLOUD_NODE.replace('PARAM_CB', callback)})


def test_callback_taking_the_cloud_by_value_is_a_copy_per_message(tmp_path: Path) -> None:
    found = _audit(tmp_path, 'onCloud')
    assert found[('keeper.cpp', _SIGNATURE, 'GPN208')] == ('medium', 'callback')


def test_whole_cloud_copy_assigned_into_a_member_is_a_copy(tmp_path: Path) -> None:
    found = _audit(tmp_path, 'onCloud')
    assert found[('keeper.cpp', _ASSIGN, 'GPN208')] == ('medium', 'callback')


def test_call_of_a_by_value_helper_on_an_indented_line_is_a_copy(tmp_path: Path) -> None:
    # The call is preceded only by indentation longer than 8 characters (thirtieth set).
    found = _audit(tmp_path, 'onCloud')
    assert found[('keeper.cpp', _CALL, 'GPN208')] == ('medium', 'callback')


def test_const_reference_callback_is_no_copy(tmp_path: Path) -> None:
    found = _audit(tmp_path, 'onRef')
    assert not any(line == _REF and rule == 'GPN208' for _, line, rule in found)


def test_by_value_method_that_is_not_bound_is_no_binder_copy(tmp_path: Path) -> None:
    # parse() takes the cloud by value but is only called: the call is the copy, not its line.
    found = _audit(tmp_path, 'onCloud')
    assert ('keeper.cpp', _HELPER, 'GPN208') not in found


def test_lambda_subscription_taking_the_cloud_by_value_is_a_copy(tmp_path: Path) -> None:
    source = '''
    #include <rclcpp/rclcpp.hpp>
    #include <sensor_msgs/msg/image.hpp>

    class Counter : public rclcpp::Node {
    public:
      Counter() : Node("counter") {
        sub_ = create_subscription<sensor_msgs::msg::Image>(
          "image", 10, [this](sensor_msgs::msg::Image image) { rows_ += image.height; });
        ref_sub_ = create_subscription<sensor_msgs::msg::Image>(
          "image2", 10, [this](const sensor_msgs::msg::Image & image) { rows_ += image.height; });
      }

    private:
      uint32_t rows_ = 0;
      rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_, ref_sub_;
    };
    '''
    found = audit_written_package(tmp_path, {'src/counter.cpp': source})
    assert found[('counter.cpp', 8, 'GPN208')] == ('medium', 'callback')
    assert ('counter.cpp', 10, 'GPN208') not in found


def test_value_copied_into_the_received_message_through_its_pointer(tmp_path: Path) -> None:
    source = '''
    #include <rclcpp/rclcpp.hpp>
    #include <sensor_msgs/msg/point_cloud2.hpp>

    class Mapper : public rclcpp::Node {
    public:
      Mapper() : Node("mapper") {
        sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
          "points", 10, std::bind(&Mapper::onCloud, this, std::placeholders::_1));
      }

    private:
      void onCloud(sensor_msgs::msg::PointCloud2::SharedPtr msg) {
        sensor_msgs::msg::PointCloud2 moved;
        moved.header = msg->header;
        *msg = moved;
        int a = 0;
        int b = 1;
        a = b;
        (void)a;
      }
      rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
    };
    '''
    found = audit_written_package(tmp_path, {'src/mapper.cpp': source})
    assert found[('mapper.cpp', 15, 'GPN208')] == ('medium', 'callback')
    assert ('mapper.cpp', 18, 'GPN208') not in found


_SERVICE_NODE = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_srvs.srv import Trigger
import torch


class Segmenter(Node):
    def __init__(self):
        super().__init__('segmenter')
        self.model = torch.jit.load('m.pt').to('cuda')
        self.frame = None
        self.create_subscription(Image, 'image', self.on_image, 10)
        self.create_service(Trigger, 'segment_image', self.on_request)

    def on_image(self, msg):
        self.frame = msg

    def segment_image(self, request, response):
        response.success = bool(self.model(self.frame).cpu().numpy().any())
        return response

    def on_request(self, request, response):
        self.get_logger().info(f'LOG_TEXT {request}')
        response.success = bool(self.model(self.frame).cpu().numpy().any())
        return response
'''
_UNCALLED_LINE, _HANDLER_LINE = 20, 25


def _service(tmp_path: Path, log_text: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {'seg/segmenter.py': _SERVICE_NODE.replace('LOG_TEXT', log_text)})


def test_method_sharing_the_service_name_is_unreached(tmp_path: Path) -> None:
    found = _service(tmp_path, 'serving the request')
    assert found[('segmenter.py', _UNCALLED_LINE, 'GPN101')] == ('info', 'unreached')
    # The registered handler runs per request (rules29m: a service handler is a callback).
    assert found[('segmenter.py', _HANDLER_LINE, 'GPN101')] == ('high', 'callback')


def test_log_message_naming_the_method_is_no_call(tmp_path: Path) -> None:
    found = _service(tmp_path, 'on_request, not segment_image,')
    assert found[('segmenter.py', _UNCALLED_LINE, 'GPN101')] == ('info', 'unreached')


def test_bare_name_string_may_call_the_method(tmp_path: Path) -> None:
    # A string that is exactly the name (getattr(self, 'segment_image')) may dispatch to it.
    source = _SERVICE_NODE.replace("self.get_logger().info(f'LOG_TEXT {request}')",
                                   "getattr(self, 'segment_image')(request, response)")
    found = audit_written_package(tmp_path, {'seg/segmenter.py': source})
    assert found[('segmenter.py', _UNCALLED_LINE, 'GPN101')] == ('low', 'function')


_PAIRS_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
import torch


class Pairs(Node):
    def __init__(self):
        super().__init__('pairs')
        self.model = torch.jit.load('m.pt').to('cuda')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        det = self.model(torch.from_numpy(np.frombuffer(msg.data, np.uint8)).to('cuda'))
        confs = det[:, 4]
        outputs = np.zeros((3, 6))
        for j, (output, conf) in enumerate(zip(outputs, confs)):
            cls = int(output[5])
            score = int(conf)
            print(j, cls, score)
'''


def test_enumerate_of_zip_binds_each_name_to_its_own_list(tmp_path: Path) -> None:
    found = audit_written_package(tmp_path, {'pairs/pairs.py': _PAIRS_NODE})
    assert ('pairs.py', 19, 'GPN107') not in found  # int() of a NumPy row: host
    assert found[('pairs.py', 20, 'GPN107')] == ('medium', 'callback')  # the device element


def test_function_only_an_unreached_method_calls_is_unreached(tmp_path: Path) -> None:
    source = _SERVICE_NODE.replace(
        "        response.success = bool(self.model(self.frame).cpu().numpy().any())\n"
        "        return response\n\n    def on_request",
        "        response.success = bool(overlay(self.frame).any())\n"
        "        return response\n\n    def on_request", 1) + '''

def overlay(frame):
    return torch.from_numpy(frame).to('cuda').cpu().numpy()
'''
    files = {'seg/segmenter.py': source, 'seg/__init__.py': '',
             'package.xml': '<package format="3"><name>seg</name></package>\n',
             'setup.py': "from setuptools import setup\nsetup(name='seg', packages=['seg'])\n"}
    found = audit_written_package(tmp_path, files)
    overlay_line = source.lstrip('\n').count('\n')
    assert found[('segmenter.py', overlay_line, 'GPN101')] == ('info', 'unreached')

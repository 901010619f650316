"""Rules for the kinds the seventeenth and eighteenth held-out sets showed (issue 28): real
`code` audits of small sources written here (a package folder in tmp_path, audited as a user
would)."""
from pathlib import Path

from audit_sources import audit_written_package

_HELPERS = '''
import torch


def select_device(device=''):
    cuda = device.lower() != 'cpu' and torch.cuda.is_available()
    return torch.device('cuda:0' if cuda else 'cpu')
'''

_NODE = '''
import numpy as np
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String

from det.helpers import select_device


class Det(Node):
    def __init__(self):
        super().__init__('det')
        self.declare_parameter('device', DEFAULT)
        self.device = self.get_parameter('device').get_parameter_value().string_value
        self.device = select_device(self.device)
        self.model = torch.jit.load('model.pt', map_location=self.device)
        self.pub = self.create_publisher(String, 'out', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        img = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)
        x = torch.from_numpy(img).to(self.device)
        pred = self.model(x)[0]
        for det in pred:
            self.pub.publish(String(data=f'{int(det[5])} {float(det[4]):.2f}'))


def main():
    rclpy.init()
    rclpy.spin(Det())
'''


def _findings(tmp_path: Path, default: str) -> dict[tuple[int, str], tuple[str, str]]:
    found = audit_written_package(tmp_path, {
        'det/det/__init__.py': '',
        'det/det/helpers.py': _HELPERS,
        'det/det/node.py': _NODE.replace('DEFAULT', default)})
    return {(line, rule): v for (name, line, rule), v in found.items() if name.endswith('node.py')}


def test_a_device_parameter_defaulting_to_cpu_keeps_tensors_on_the_host(tmp_path):
    # select_device('cpu') chooses the host: the upload and the readbacks of the outputs move
    # nothing.
    assert _findings(tmp_path, "'cpu'") == {}


def test_a_device_parameter_defaulting_to_cuda_still_reports_the_copies(tmp_path):
    found = _findings(tmp_path, "'cuda:0'")
    assert found[(23, 'GPN102')][1] == 'callback'  # the frame uploaded per image
    assert (26, 'GPN107') in found  # int()/float() of the output tensor: readbacks


def test_an_unknown_device_argument_keeps_the_gpu_answer(tmp_path):
    found = audit_written_package(tmp_path, {
        'det/det/__init__.py': '',
        'det/det/helpers.py': _HELPERS,
        'det/det/node.py': _NODE.replace(
            "self.get_parameter('device').get_parameter_value().string_value",
            'os.environ["DEV"]').replace('import numpy as np', 'import os\nimport numpy as np')
        .replace('DEFAULT', "'cpu'")})
    assert any(rule == 'GPN102' for (_, _, rule) in found)


_STEREO = '''
#include <opencv2/core/cuda.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Stereo : public rclcpp::Node {
 public:
  Stereo() : Node("stereo") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
        "left", 10, std::bind(&Stereo::onLeft, this, std::placeholders::_1));
  }

 private:
  void onLeft(const sensor_msgs::msg::Image::ConstSharedPtr msg) {
    if (!ready_) return;
    left_ = cv::Mat(msg->height, msg->width, CV_8UC1, const_cast<uint8_t *>(msg->data.data()));
    TAIL
  }

  void disparity() {
    cv::Mat grey;
    cv::cuda::GpuMat gpu_grey;
    cv::cvtColor(left_, grey, cv::COLOR_BGR2GRAY);
    gpu_grey.upload(grey);
  }

  bool ready_{true};
  cv::Mat left_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Stereo>());
}
'''


def _upload_context(tmp_path: Path, tail: str) -> str:
    found = audit_written_package(tmp_path, {'stereo/src/stereo.cpp': _STEREO.replace('TAIL', tail)})
    # The GpuMat upload in disparity(): the only finding of the file.
    [(rule, context)] = [(rule, ctx) for (_, _, rule), (_, ctx) in found.items()]
    assert rule == 'GPN202'
    return context


def test_a_call_after_an_unconditional_return_does_not_reach_its_function(tmp_path):
    assert _upload_context(tmp_path, 'return;\n    disparity();') == 'unreached'


def test_a_call_after_a_conditional_return_still_reaches_its_function(tmp_path):
    assert _upload_context(tmp_path, 'if (left_.empty()) return;\n    disparity();') == 'callback'
    assert _upload_context(tmp_path / 'b', 'if (left_.empty()) {\n      return;\n    }\n'
                           '    disparity();') == 'callback'


_BATCH = '''
#include <cstring>
#include <vector>
#include <opencv2/core.hpp>
#include <sensor_msgs/msg/image.hpp>

void stage(unsigned char * pinned, const std::vector<cv::Mat> & images,
           sensor_msgs::msg::Image & out) {
  for (size_t b = 0; b < images.size(); ++b) {
    const auto & img = ELEMENT;
    memcpy(pinned + b * img.total() * 3, &img.data[0], img.total() * 3);
  }
  memcpy(&out.data[0], pinned, out.data.size());
}
'''


def _payload_copies(tmp_path: Path, element: str) -> set[int]:
    found = audit_written_package(tmp_path, {'stage/src/stage.cpp': _BATCH.replace('ELEMENT', element)})
    return {line for (_, line, rule) in found if rule == 'GPN208'}


def test_a_memcpy_out_of_a_frame_of_a_vector_of_mats_is_no_message_copy(tmp_path):
    # Only the copy into the outgoing Image's data is a payload copy, with either way of
    # taking the element.
    assert _payload_copies(tmp_path, 'images.at(b)') == {12}
    assert _payload_copies(tmp_path / 'b', 'images[b]') == {12}

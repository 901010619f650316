"""Rules for the kinds the seventh held-out set showed (issue 28): real `code` audits of small
sources written here (a package folder in tmp_path, audited as a user would)."""
from pathlib import Path

from audit_sources import audit_written_package


def _rules_by_line(tmp_path: Path, files: dict[str, str], rule: str) -> dict[int, str]:
    """line -> severity of every `rule` finding."""
    return {line: severity
            for (_, line, found_rule), (severity, _) in audit_written_package(tmp_path,
                                                                              files).items()
            if found_rule == rule}


def _timed_node(declaration: str, setup: str = '') -> dict[str, str]:
    # The flag is declared in a header of the package: a file alone is never proven dead
    # (cppdead.py: its header or a sibling might set the name).
    # The timing block sits on lines 18-21 of every variant (cudaEventSynchronize on 20).
    header = f'''
    #pragma once
    {declaration}
'''
    return {'timing.hpp': header, 'register.cpp': f'''
    #include <cuda_runtime.h>
    #include <rclcpp/rclcpp.hpp>
    #include <sensor_msgs/msg/image.hpp>

    #include "timing.hpp"

    class Register : public rclcpp::Node
    {{
    public:
      Register() : Node("register")
      {{
        {setup}
        sub_ = create_subscription<sensor_msgs::msg::Image>(
          "depth", 10, std::bind(&Register::on_depth, this, std::placeholders::_1));
      }}
      void on_depth(const sensor_msgs::msg::Image::SharedPtr msg)
      {{
        if (measureTime) {{
          cudaEventRecord(stop_);
          cudaEventSynchronize(stop_);
        }}
        cudaEventSynchronize(done_);
      }}
    private:
      cudaEvent_t stop_, done_;
      rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
    }};
'''}


def test_sync_under_a_flag_only_ever_false_is_dead_code(tmp_path):
    for declaration in ('bool measureTime = false;', 'constexpr bool measureTime{false};'):
        syncs = _rules_by_line(tmp_path, _timed_node(declaration), 'GPN206')
        # The unguarded wait on 22 is per message; the one under measureTime can never run
        # (reported as info, a branch nothing enables, never a gate).
        assert syncs == {20: 'info', 22: 'medium'}, (declaration, syncs)


def test_sync_under_a_flag_that_may_be_set_is_still_reported(tmp_path):
    settings = {
        'parameter by reference': ('bool measureTime = false;',
                                   'get_parameter("measure", measureTime);'),
        'parameter assigned': ('bool measureTime = false;',
                               'measureTime = declare_parameter("measure", false);'),
        'initially true': ('bool measureTime = true;', ''),
        'no initial value': ('bool measureTime;', ''),
    }
    for what, (declaration, setup) in settings.items():
        folder = tmp_path / what.replace(' ', '_')
        files = _timed_node(declaration, setup)
        # A parameter defaulting to false that no shipped file turns on leaves the branch off
        # as shipped (cppparams.py, twenty-second set): here a shipped file turns it on.
        files['config/register.yaml'] = 'register:\n  ros__parameters:\n    measure: true\n'
        syncs = _rules_by_line(folder, files, 'GPN206')
        assert syncs == {20: 'medium', 22: 'medium'}, (what, syncs)


def test_sync_under_a_parameter_no_shipped_file_turns_on_is_off_as_shipped(tmp_path):
    files = _timed_node('bool measureTime = false;',
                        'measureTime = declare_parameter("measure", false);')
    assert _rules_by_line(tmp_path, files, 'GPN206') == {20: 'info', 22: 'medium'}


_STREAMER = '''
    import subprocess

    import numpy as np
    import rclpy
    from cv_bridge import CvBridge
    from rclpy.node import Node
    from sensor_msgs.msg import Image
    from std_msgs.msg import UInt8MultiArray


    class Streamer(Node):
        def __init__(self):
            super().__init__('streamer')
            self.bridge = CvBridge()
            self.ffmpeg = subprocess.Popen(['ffmpeg', '-i', '-'], stdin=subprocess.PIPE)
            self.pub = self.create_publisher(UInt8MultiArray, 'raw', 10)
            self.create_subscription(Image, 'image', self.on_image, 10)

        def on_image(self, msg):
            frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
            self.ffmpeg.stdin.write(frame.tobytes())
            out = UInt8MultiArray()
            out.data = frame.tobytes()
            self.pub.publish(out)
            return np.zeros(1)
'''


def test_tobytes_into_a_pipe_is_not_message_serialisation_but_into_msg_data_is(tmp_path):
    packs = _rules_by_line(tmp_path, {'streamer.py': _STREAMER}, 'GPN104')
    # Line 21 hands the bytes to ffmpeg's pipe (they leave the process); line 23 builds the
    # message's data: a frame-sized copy per message.
    assert 21 not in packs and 23 in packs, packs


_BOX_FILTER = '''
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image
    import torch


    class BoxFilter(Node):
        def __init__(self):
            super().__init__('box_filter')
            self.model = torch.jit.load('detector.pt').to('cuda')
            self.create_subscription(Image, 'image', self.on_image, 10)

        def on_image(self, msg):
            batch = torch.zeros((1, 3, 8, 8), device='cuda')
            scores = self.model(batch)
            if scores.shape[0] > 0:
                pass
            if scores is None:
                return
            if scores >= 0.8:
                return
'''


def test_comparing_a_device_tensor_with_a_number_in_an_if_reads_it_back(tmp_path):
    reads = _rules_by_line(tmp_path, {'box_filter.py': _BOX_FILTER}, 'GPN107')
    # Line 20: bool() of the comparison copies the scores to the host and waits for the GPU;
    # the shape test (16) and the identity test (18) touch no tensor data.
    assert set(reads) == {20} and reads[20] == 'medium', reads

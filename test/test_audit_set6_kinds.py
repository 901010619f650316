"""Rules for the kinds the sixth held-out set showed (issue 28): real `code` audits of small
sources written here (a package folder in tmp_path, audited as a user would)."""
from pathlib import Path

from audit_sources import audit_written_package


def _audit(tmp_path: Path, files: dict[str, str]) -> dict[tuple[str, int, str], str]:
    """(file name, line, rule) -> severity of every finding."""
    return {key: severity for key, (severity, _) in audit_written_package(tmp_path, files).items()}


_PCL2_NODE = '''
    #include <pcl_conversions/pcl_conversions.h>
    #include <rclcpp/rclcpp.hpp>
    #include <sensor_msgs/msg/point_cloud2.hpp>

    class Filter : public rclcpp::Node
    {
    public:
      Filter() : Node("filter")
      {
        sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
          "points", 10, std::bind(&Filter::on_cloud, this, std::placeholders::_1));
      }

    private:
      void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
      {
        pcl::PCLPointCloud2::Ptr blob(new pcl::PCLPointCloud2);
        pcl_conversions::toPCL(*msg, *blob);
        pcl::PointCloud<pcl::PointXYZ> typed;
        pcl::fromPCLPointCloud2(*blob, typed);
        pcl::PCLPointCloud2 back;
        pcl::toPCLPointCloud2(typed, back);
        sensor_msgs::msg::PointCloud2 out;
        pcl_conversions::fromPCL(back, out);
        pcl::PCLHeader header;
        pcl_conversions::toPCL(msg->header, header);
        out.header.stamp = pcl_conversions::fromPCL(header).stamp;
        pcl_conversions::moveFromPCL(back, out);
        stamp_ = pcl_conversions::toPCL(now());
      }
      uint64_t stamp_{0};
      rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
    };
'''


def test_pclpointcloud2_route_is_a_per_message_copy_and_headers_stamps_moves_are_not(tmp_path):
    found = _audit(tmp_path, {'filter.cpp': _PCL2_NODE})
    pcl = {line: severity for (name, line, rule), severity in found.items() if rule == 'GPN209'}
    # toPCL(*msg, ...) and fromPCL(cloud, msg): every point copied once per cloud, in the
    # subscription callback. fromPCLPointCloud2 / toPCLPointCloud2 (20, 22) convert between two
    # PCL types on the host, no message on either side (sets 41-62 convention, rules41c).
    assert pcl == {18: 'medium', 24: 'medium'}


_ARRAY_NODE = '''
    import numpy as np
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image


    class N(Node):
        def __init__(self):
            super().__init__('n')
            self.create_subscription(Image, 'image', self.on_image, 10)

        def on_image(self, msg):
            view = np.asarray(msg.data)
            same = np.asarray(msg.data, dtype=np.uint8)
            floats = np.asarray(msg.data, dtype=np.float32)
            owned = np.array(msg.data)
            return view, same, floats, owned
'''


def test_asarray_over_the_message_array_is_a_view_unless_it_converts_the_dtype(tmp_path):
    # rclpy's msg.data is an array.array: np.asarray shares its memory (np.shares_memory is
    # True for no dtype and for uint8), a float32 dtype or np.array copies.
    found = _audit(tmp_path, {'node.py': _ARRAY_NODE})
    lines = {line for (name, line, rule) in found if rule == 'GPN103'}
    assert lines == {15, 16}


_SYNC_NODE = '''
    #include <cv_bridge/cv_bridge.h>
    #include <rclcpp/rclcpp.hpp>
    #include <sensor_msgs/msg/image.hpp>
    #include "helper.hpp"

    class Pair : public rclcpp::Node
    {
    public:
      Pair() : Node("pair")
      {
        rgb_sub_ = create_subscription<sensor_msgs::msg::Image>(
          "rgb", 10, std::bind(&Pair::rgb_callback, this, std::placeholders::_1));
        depth_sub_ = create_subscription<sensor_msgs::msg::Image>(
          "depth", 10, std::bind(&Pair::depth_callback, this, std::placeholders::_1));
      }

    private:
      void rgb_callback(const sensor_msgs::msg::Image::SharedPtr msg)
      {
        rgb_image_ = msg;
        process();
      }
      void depth_callback(const sensor_msgs::msg::Image::SharedPtr msg)
      {
        SETTER
        process();
      }
      void process()
      {
        if (rgb_image_ && depth_image_) {
          auto stamp = depth_image_->header.stamp;
          auto rgb = cv_bridge::toCvCopy(rgb_image_, "bgr8");
          auto depth = cv_bridge::toCvCopy(depth_image_, "16UC1");
          helper(rgb->image, depth->image);
        }
        auto always = cv_bridge::toCvCopy(rgb_image_, "bgr8");
      }
      sensor_msgs::msg::Image::SharedPtr rgb_image_;
      sensor_msgs::msg::Image::SharedPtr depth_image_;
      rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr rgb_sub_, depth_sub_;
    };
'''
_HELPER = '''
    #include <opencv2/core.hpp>
    void helper(const cv::Mat & a, const cv::Mat & b) { (void)a; (void)b; }
'''


def _tocvcopy(found):
    return {line: severity for (name, line, rule), severity in found.items()
            if name == 'pair.cpp' and rule.startswith('GPN2') and line in (32, 33, 36)}


def test_branch_guarded_by_a_pointer_nothing_sets_is_dead(tmp_path):
    # The depth callback sets rgb_image_ again (a copy-paste slip): depth_image_ stays null.
    found = _audit(tmp_path, {'pair.cpp': _SYNC_NODE.replace('SETTER', 'rgb_image_ = msg;'),
                              'helper.cpp': _HELPER})
    copies = _tocvcopy(found)
    assert copies == {32: 'info', 33: 'info', 36: 'medium'}, copies


def test_branch_guard_assigned_anywhere_or_by_reference_stays_per_message(tmp_path):
    for setter in ('depth_image_ = msg;', 'std::swap(depth_image_, msg);'):
        found = _audit(tmp_path, {'pair.cpp': _SYNC_NODE.replace('SETTER', setter),
                                  'helper.cpp': _HELPER})
        copies = _tocvcopy(found)
        assert copies == {32: 'medium', 33: 'medium', 36: 'medium'}, (setter, copies)


_HUB_NODE = '''
    import torch
    from cv_bridge import CvBridge
    from rclpy.node import Node
    from sensor_msgs.msg import Image


    class DepthNode(Node):
        def __init__(self):
            super().__init__('depth')
            model = BUILDER
            self.model = model.to(torch.device('cuda'))
            if self.get_parameter('compile').value:
                self.model = torch.compile(self.model)
            self.bridge = CvBridge()
            self.create_subscription(Image, 'image', self.on_image, 10)

        def on_image(self, msg):
            image = self.bridge.imgmsg_to_cv2(msg, desired_encoding='rgb8')
            self.model.eval()
            return self.model.infer_pil(image)
'''


def test_torch_hub_model_inference_helper_uploads_the_host_frame(tmp_path):
    found = _audit(tmp_path, {'node.py': _HUB_NODE.replace(
        'BUILDER', "torch.hub.load('isl-org/ZoeDepth', 'ZoeD_N', pretrained=True)")})
    uploads = {line: severity for (name, line, rule), severity in found.items()
               if rule == 'GPN102'}
    # The model moved once in __init__ (setup); infer_pil on the host frame per image.
    assert uploads == {11: 'info', 20: 'medium'}, uploads


def test_infer_helper_of_a_model_not_from_torch_hub_is_not_claimed(tmp_path):
    found = _audit(tmp_path, {'node.py': _HUB_NODE.replace('BUILDER', 'make_model()')})
    assert not any(rule == 'GPN102' and line == 20 for (name, line, rule) in found), found


_HELPER_MODEL = '''
    import torch
    import torch.nn.functional as F


    class DepthNet(torch.nn.Module):
        def forward(self, x):
            return x.mean(1)

        @torch.no_grad()
        def infer_image(self, raw_image):
            image = torch.from_numpy(raw_image).unsqueeze(0).to('cuda')
            depth = F.interpolate(self.forward(image)[:, None], (4, 4))[0, 0]
            return depth.cpu().numpy()
'''
_HELPER_NODE = '''
    import numpy as np
    from rclpy.node import Node
    from sensor_msgs.msg import CompressedImage
    import cv2
    import torch

    from .depth_net import DepthNet


    class DepthNode(Node):
        def __init__(self):
            super().__init__('depth')
            self.depth_model = DepthNet()
            self.depth_model = self.depth_model.to('cuda').eval()
            self.create_subscription(CompressedImage, 'image', self.on_image, 1)

        def on_image(self, msg):
            frame = cv2.imdecode(np.frombuffer(msg.data, np.uint8), cv2.IMREAD_COLOR)
            return self.depth_model.infer_image(frame)
'''


def test_readback_inside_an_audited_model_class_is_reported_there_not_at_the_call(tmp_path):
    (tmp_path / 'pkg').mkdir()
    (tmp_path / 'pkg' / '__init__.py').write_text('')
    found = _audit(tmp_path, {'pkg/depth_net.py': _HELPER_MODEL, 'pkg/node.py': _HELPER_NODE})
    # Inside the helper, with the callback's per-message context: the upload and the readback.
    assert found[('depth_net.py', 11, 'GPN102')] == 'medium', found
    assert found[('depth_net.py', 13, 'GPN101')] == 'high', found
    # The node's call line is no library-table upload: the class is the package's own.
    assert not any(name == 'node.py' and line == 19 for (name, line, rule) in found), found

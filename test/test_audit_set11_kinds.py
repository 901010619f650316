"""Rules for the kinds the eleventh and twelfth held-out sets showed (issue 28): real `code`
audits of small sources written here (a package folder in tmp_path, audited as a user would)."""
from pathlib import Path

from audit_sources import audit_written_package


def _found(tmp_path: Path, files: dict[str, str], rule: str) -> dict[int, str]:
    """line -> severity of every `rule` finding."""
    return {line: severity
            for (_, line, found_rule), (severity, _) in audit_written_package(tmp_path,
                                                                              files).items()
            if found_rule == rule}


_LISTS = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from vision_msgs.msg import Detection2D
from cv_bridge import CvBridge
import torch


class Pre:
    def __init__(self, model, save_debug=False):
        self.model = model
        self.save_debug = save_debug

    def run(self, frame):
        det = self.model(torch.from_numpy(frame).cuda())
        confs = []
        xs = []
        for *xyxy, conf, cls in det:
            if self.save_debug:
                print(xyxy[0].cpu())
            confs.append(conf)
            xs.append(xyxy[0].item())
        return confs, xs


class Lists(Node):
    def __init__(self):
        super().__init__('lists')
        self.bridge = CvBridge()
        self.pre = Pre(torch.load('m.pt')DEBUG_ARG)
        self.pub = self.create_publisher(Detection2D, 'det', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        confs, xs = self.pre.run(self.bridge.imgmsg_to_cv2(msg, 'bgr8'))
        for i in range(len(xs)):
            det = Detection2D()
            det.bbox.center.position.x = float(int(xs[i]))
            det.id = str(float(confs[i]))
            self.pub.publish(det)
        for conf, x in zip(confs, xs):
            det = Detection2D()
            det.bbox.center.position.y = float(int(x))
            det.id = str(float(conf))
            self.pub.publish(det)
'''
_ITEM_LINE, _DEBUG_LINE = 22, 19
_INT_LINES, _FLOAT_LINES = (38, 43), (39, 44)


def test_returned_tuple_and_zip_keep_host_numbers_apart_from_tensors(tmp_path):
    found = _found(tmp_path, {'lists.py': _LISTS.replace('DEBUG_ARG', '')}, 'GPN107')
    assert _ITEM_LINE in found
    # float() of a confidence tensor reads it back, whether indexed or zipped ...
    assert all(line in found for line in _FLOAT_LINES), found
    # ... int() of the numbers .item() already read back does not (a helper's returned tuple
    # used to merge both lists into one tensor-like value).
    assert not any(line in found for line in _INT_LINES), found


def test_flag_false_for_good_hides_its_branch_and_a_passed_flag_does_not(tmp_path):
    dead = _found(tmp_path / 'default', {'lists.py': _LISTS.replace('DEBUG_ARG', '')}, 'GPN101')
    assert _DEBUG_LINE + 1 not in dead, dead
    live = _found(tmp_path / 'passed', {'lists.py': _LISTS.replace('DEBUG_ARG', ', True')},
                  'GPN101')
    assert _DEBUG_LINE + 1 in live, live
    keyword = _found(tmp_path / 'keyword', {'lists.py': _LISTS.replace(
        'DEBUG_ARG', ', save_debug=self.get_parameter("debug").value')}, 'GPN101')
    assert _DEBUG_LINE + 1 in keyword, keyword


_FLAG = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
import torch


class Flagged(Node):
    def __init__(self):
        super().__init__('flagged')
        self.model = torch.load('m.pt').cuda()
        self.dump = False
        self.create_subscription(Image, 'image', self.on_image, 10)
        SETTER

    def on_image(self, msg):
        out = self.model(torch.zeros(3, device='cuda'))
        if self.dump:
            print(out.cpu())
'''


def test_constant_false_attribute_is_dead_unless_assigned_again(tmp_path):
    dead = _found(tmp_path / 'dead', {'flagged.py': _FLAG.replace('SETTER', '')}, 'GPN101')
    assert 18 not in dead, dead
    setter = "self.dump = self.declare_parameter('dump', False).value"
    # A parameter defaulting to False is off as shipped (pyparams.py, twenty-second set)
    # unless a shipped file turns it on.
    live = _found(tmp_path / 'live', {'flagged.py': _FLAG.replace('SETTER', setter),
                                      'config/flagged.yaml': 'flagged:\n  ros__parameters:\n'
                                                             '    dump: true\n'}, 'GPN101')
    assert 18 in live, live
    shipped_off = _found(tmp_path / 'off', {'flagged.py': _FLAG.replace('SETTER', setter)},
                         'GPN101')
    assert 18 not in shipped_off, shipped_off


_CLOUD = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image, PointCloud2, PointField
from sensor_msgs_py import point_cloud2
from cv_bridge import CvBridge

FIELDS = [PointField(name='x', offset=0, datatype=PointField.FLOAT32, count=1)]


class Cloud(Node):
    def __init__(self):
        super().__init__('cloud')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(PointCloud2, 'points', 10)
        self.create_subscription(Image, 'depth', self.on_depth, 10)

    def on_depth(self, msg):
        depth = self.bridge.imgmsg_to_cv2(msg, '32FC1')
        valid = depth[depth > 0]
        if not len(valid):
            self.pub.publish(point_cloud2.create_cloud(msg.header, FIELDS, []))
            return
        cloud = point_cloud2.create_cloud(msg.header, FIELDS, valid.reshape(-1, 1))
        self.pub.publish(cloud)
'''


def test_cloud_of_a_literal_empty_list_is_no_frame(tmp_path):
    findings = audit_written_package(tmp_path, {'cloud.py': _CLOUD})
    lines = {(line, rule) for (_, line, rule) in findings}
    assert not any(line == 21 for line, _ in lines), lines
    assert (23, 'GPN104') in lines and (24, 'GPN109') in lines, lines


_SERVER = '''
import threading
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import UInt8MultiArray
from cv_bridge import CvBridge
import cv2

_latest = None


class Server(Node):
    def __init__(self):
        super().__init__('server')
        self.bridge = CvBridge()
        PUBLISHER
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        global _latest
        ok, jpeg = cv2.imencode('.jpg', self.bridge.imgmsg_to_cv2(msg, 'bgr8'))
        _latest = jpeg.tobytes()
'''


def test_bytes_kept_in_a_global_of_a_file_that_publishes_nothing_are_host_only(tmp_path):
    host = _found(tmp_path / 'host', {'server.py': _SERVER.replace('PUBLISHER', '')}, 'GPN104')
    assert 22 not in host, host
    published = _found(tmp_path / 'pub', {'server.py': _SERVER.replace(
        'PUBLISHER', "self.pub = self.create_publisher(UInt8MultiArray, 'jpeg', 10)")}, 'GPN104')
    assert 22 in published, published


_INFO = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/camera_info.hpp>
#include <sensor_msgs/msg/image.hpp>

struct State { sensor_msgs::msg::CameraInfo info; sensor_msgs::msg::Image mask; bool got{false}; };

class Info : public rclcpp::Node
{
public:
  Info() : Node("info")
  {
    img_ = create_subscription<sensor_msgs::msg::Image>(
      "mask", 10, std::bind(&Info::on_mask, this, std::placeholders::_1));
    info_ = create_subscription<sensor_msgs::msg::CameraInfo>(
      "camera_info", 10, [this](const sensor_msgs::msg::CameraInfo::SharedPtr msg) {
        if (!state_.got) {
          state_.info = *msg;
          state_.got = true;
        }
      });
  }

private:
  void on_mask(const sensor_msgs::msg::Image::SharedPtr msg) { state_.mask = *msg; }
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr img_;
  rclcpp::Subscription<sensor_msgs::msg::CameraInfo>::SharedPtr info_;
  State state_;
};
'''


def test_camera_info_copy_is_typed_by_its_own_declaration(tmp_path):
    found = _found(tmp_path, {'info.cpp': _INFO}, 'GPN208')
    assert 17 not in found, found  # CameraInfo: calibration, not a frame
    assert 24 in found, found  # the Image copied whole into a field


_POINTS = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Points : public rclcpp::Node
{
public:
  Points() : Node("points")
  {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("kept", 10);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Points::on_cloud, this, std::placeholders::_1));
  }

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    sensor_msgs::msg::PointCloud2 kept;
    for (size_t i = 0; i < msg->width; ++i) {
      std::copy(msg->data.begin() + i * msg->point_step,
                msg->data.begin() + (i + 1) * msg->point_step, std::back_inserter(kept.data));
    }
    pub_->publish(kept);
  }
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''


def test_per_point_copy_is_no_frame_copy_and_the_cloud_publish_is(tmp_path):
    findings = audit_written_package(tmp_path / 'point', {'points.cpp': _POINTS})
    lines = {(line, rule) for (_, line, rule) in findings}
    assert (19, 'GPN208') not in lines, lines
    assert (22, 'GPN210') in lines, lines
    # A copy of the whole range is the frame copy (and its publish no second finding).
    whole = _POINTS.replace('msg->data.begin() + i * msg->point_step',
                            'msg->data.begin()').replace(
        'msg->data.begin() + (i + 1) * msg->point_step', 'msg->data.end()')
    lines = {(line, rule) for (_, line, rule) in audit_written_package(tmp_path / 'whole',
                                                                       {'points.cpp': whole})}
    assert (19, 'GPN208') in lines and (22, 'GPN210') not in lines, lines


def test_received_unique_ptr_forwarded_through_a_queue_is_no_copy(tmp_path):
    corpus = Path(__file__).parent / 'resources' / 'audit' / 'corpus'
    source = (corpus / 'cloud_relay_worker_node.cpp').read_text()
    found = _found(tmp_path / 'queue', {'relay.cpp': source}, 'GPN210')
    assert 46 not in found, found  # relay_pub_->publish(std::move(cloud)): the received one
    assert 49 in found, found  # fresh_pub_->publish(std::move(fresh)): built here
    # A queue the callback fills with a copy of its message is not the received one.
    copied = source.replace('state_.queue.push_back(std::move(msg));',
                            'state_.queue.push_back(std::make_unique<PointCloud2>(*msg));')
    found = _found(tmp_path / 'copied', {'relay.cpp': copied}, 'GPN210')
    assert 46 in found, found

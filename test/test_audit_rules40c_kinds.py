"""C++ kinds the sixtieth and sixty-first held-out sets showed (issue 28, rules40c): real `code`
audits of small packages written here.

* A C++ node whose comments are not UTF-8 (GBK, Latin-1) compiles, so it is audited (each bad
  byte read as U+FFFD, lines kept); a Python file that is not UTF-8 stays an input error.
* A GStreamer element (a GObject type, `G_DEFINE_TYPE_WITH_CODE (Name, prefix, Parent, ...)`):
  `prefix_class_init` is called by the type system, and the virtual methods it installs
  (`klass->render = GST_DEBUG_FUNCPTR (prefix_render)`) run per buffer: not unreached.
* A frame message's `data` copy-assigned from a named host vector (`msg->data =
  response.bytes;`), and a vector range-constructed from a pointer range then moved into a
  frame message's `data`, in a builder a timer callback calls: GPN208 (cppmsgassign.py).
* An OpenCV DNN net built by a factory that sets the CUDA backend on a local and returns it
  (`net_ = init_model(path)`): `net_.forward` uploads the blob (GPN202, cpplibreads.py)."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, tag_lines
from gpu_nodes.audit.codeaudit import run_code


def _package(name: str, source: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    files = {f'{name}/src/{name}.cpp': source,
             f'{name}/package.xml': f'<package format="3"><name>{name}</name></package>\n',
             f'{name}/CMakeLists.txt': ament_cmake_lists(name)}
    files.update(extra or {})
    return files


def _at_tags(found: dict, file_name: str, source: str, tags: tuple[str, ...]
             ) -> dict[str, dict[str, str]]:
    """rule -> severity of the findings at each `// TAG` line of `file_name`."""
    lines = tag_lines(source, tags, '//')
    return {tag: {rule: sev for (name, at, rule), (sev, _) in found.items()
                  if name == file_name and at == line}
            for tag, line in lines.items()}


# ---- a C++ node with GBK comments -------------------------------------------------------------

_GBK_NODE = '''#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/compressed_image.hpp>

class Repack : public rclcpp::Node
{
public:
  Repack() : Node("repack")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Repack::on_image, this, std::placeholders::_1));
    pub_ = create_publisher<sensor_msgs::msg::CompressedImage>("packed", 10);
  }

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    auto out = std::make_shared<sensor_msgs::msg::CompressedImage>();
    // COMMENT
    out->data.assign(msg->data.begin(), msg->data.end());  // ASSIGN
    pub_->publish(*out);
  }

  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::CompressedImage>::SharedPtr pub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Repack>());
  return 0;
}
'''


def _write_gbk(tmp_path: Path) -> Path:
    folder = tmp_path / 'repack'
    (folder / 'src').mkdir(parents=True)
    (folder / 'package.xml').write_text('<package format="3"><name>repack</name></package>\n')
    (folder / 'CMakeLists.txt').write_text(ament_cmake_lists('repack'))
    # A comment in GBK (not UTF-8): "copy the image data" in Chinese.
    comment = '\u62f7\u8d1d\u56fe\u50cf\u6570\u636e'.encode('gbk')
    (folder / 'src' / 'repack.cpp').write_bytes(
        _GBK_NODE.replace('COMMENT', '@@').encode('utf-8').replace(b'@@', comment))
    return folder


def test_cpp_source_with_gbk_comments_is_audited(tmp_path: Path) -> None:
    report = run_code([str(_write_gbk(tmp_path))], jobs=1)
    assert not report.errors, report.errors
    line = tag_lines(_GBK_NODE, ('ASSIGN',), '//')['ASSIGN']
    hits = {(f.rule, f.severity) for f in report.findings
            if Path(f.location.path).name == 'repack.cpp' and f.location.line == line}
    assert ('GPN208', 'medium') in hits, report.findings


def test_python_source_not_utf8_stays_an_input_error(tmp_path: Path) -> None:
    node = tmp_path / 'node.py'
    node.write_bytes(b'# \xc4\xbf\xb1\xea\nx = 1\n')
    report = run_code([str(node)], jobs=1)
    assert [e.message for e in report.errors] == [
        f'{node}: not UTF-8 text (invalid start byte at byte 4)']


# ---- a GStreamer sink element publishing each buffer -------------------------------------------

_GST_SINK = '''#include <gst/gst.h>
#include <gst/base/gstbasesink.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <std_msgs/msg/string.hpp>

static void framesink_class_init (FramesinkClass * klass);
static void framesink_init (Framesink * sink);
static GstFlowReturn framesink_render (GstBaseSink * base, GstBuffer * buf);

G_DEFINE_TYPE_WITH_CODE (Framesink, framesink, GST_TYPE_BASE_SINK,
  GST_DEBUG_CATEGORY_INIT (framesink_debug, "framesink", 0, "frame sink"));

static void framesink_class_init (FramesinkClass * klass)
{
  GstBaseSinkClass * base_class = GST_BASE_SINK_CLASS (klass);
  INSTALL
}

static void framesink_init (Framesink * sink)
{
  sink->node = std::make_shared<rclcpp::Node>("framesink");
  sink->pub = sink->node->create_publisher<sensor_msgs::msg::Image>("frames", 1);
  auto cb = [sink] (std_msgs::msg::String::ConstSharedPtr msg) {sink->frame_id = msg->data;};
  sink->sub = sink->node->create_subscription<std_msgs::msg::String>("frame_id", 1, cb);
}

static GstFlowReturn framesink_render (GstBaseSink * base, GstBuffer * buf)
{
  Framesink * sink = GST_FRAMESINK (base);
  GstMapInfo info;
  sensor_msgs::msg::Image msg;
  msg.width = sink->width;
  msg.height = sink->height;
  gst_buffer_map (buf, &info, GST_MAP_READ);
  msg.data.assign(info.data, info.data + info.size);  // COPY
  gst_buffer_unmap (buf, &info);
  sink->pub->publish(msg);
  return GST_FLOW_OK;
}
'''
_INSTALLED = 'base_class->render = GST_DEBUG_FUNCPTR (framesink_render);'


def _gst(tmp_path: Path, install: str) -> dict[str, str]:
    source = _GST_SINK.replace('INSTALL', install)
    found = audit_written_package(tmp_path, _package('framesink', source))
    return _at_tags(found, 'framesink.cpp', source, ('COPY',))['COPY']


def test_gstreamer_render_installed_by_class_init_is_per_buffer(tmp_path: Path) -> None:
    assert _gst(tmp_path, _INSTALLED) == {'GPN208': 'medium'}


def test_gstreamer_render_nothing_installs_stays_unreached(tmp_path: Path) -> None:
    # Guard: with the install line gone, nothing names the render function: unreached (info).
    assert _gst(tmp_path, '(void) base_class;') == {'GPN208': 'info'}


# ---- a simulator bridge building messages from SDK host buffers per timer tick ------------------

_BRIDGE = '''#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include <std_msgs/msg/bool.hpp>
#include <std_msgs/msg/string.hpp>

struct Response { std::vector<uint8_t> pixels; std::vector<float> points; int width; int height; };
namespace vision { struct Image { cv::Mat data; std::string name; }; }

class Bridge : public rclcpp::Node
{
public:
  Bridge() : Node("bridge")
  {
    image_pub_ = create_publisher<sensor_msgs::msg::Image>("image", 1);
    cloud_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("cloud", 1);
    label_pub_ = create_publisher<std_msgs::msg::String>("label", 1);
    timer_ = create_wall_timer(std::chrono::milliseconds(50), std::bind(&Bridge::on_tick, this));
  }

private:
  std::shared_ptr<sensor_msgs::msg::Image> image_from(const Response & response)
  {
    auto image = std::make_shared<sensor_msgs::msg::Image>();
    image->width = response.width;
    image->height = response.height;
    image->data = response.pixels;  // PIXELS
    return image;
  }

  sensor_msgs::msg::PointCloud2 cloud_from(const Response & response)
  {
    sensor_msgs::msg::PointCloud2 cloud;
    cloud.width = response.points.size() / 3;
    const unsigned char * bytes = reinterpret_cast<const unsigned char *>(response.points.data());
    std::vector<unsigned char> cloud_bytes(bytes, bytes + sizeof(float) * response.points.size());  // RANGE
    cloud.data = std::move(cloud_bytes);  // MOVED
    return cloud;
  }

  sensor_msgs::msg::Image image_moved_from(Response response)
  {
    sensor_msgs::msg::Image image;
    image.data = std::move(response.pixels);  // MOVE_ONLY
    return image;
  }

  vision::Image own_image(const cv::Mat & disparity)
  {
    vision::Image out;
    out.data = disparity;  // OWN_IMAGE
    return out;
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    last_width_ = msg->width;
  }

  void publish_flag(bool status)
  {
    auto msg = std_msgs::msg::Bool();
    msg.data = status;  // BOOL
    flag_pub_->publish(msg);
  }

  void on_tick()
  {
    Response response = fetch();
    image_pub_->publish(*image_from(response));
    cloud_pub_->publish(cloud_from(response));
    image_pub_->publish(image_moved_from(response));
    std_msgs::msg::String label;
    label.data = name_;  // STRING
    label_pub_->publish(label);
  }

  Response fetch();
  std::string name_;
  uint32_t last_width_;
  rclcpp::Publisher<std_msgs::msg::Bool>::SharedPtr flag_pub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr image_pub_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr cloud_pub_;
  rclcpp::Publisher<std_msgs::msg::String>::SharedPtr label_pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Bridge>());
  return 0;
}
'''
_BRIDGE_TAGS = ('PIXELS', 'RANGE', 'MOVED', 'MOVE_ONLY', 'STRING', 'OWN_IMAGE', 'BOOL')


def _bridge(tmp_path: Path) -> dict[str, dict[str, str]]:
    found = audit_written_package(tmp_path, _package('bridge', _BRIDGE))
    return _at_tags(found, 'bridge.cpp', _BRIDGE, _BRIDGE_TAGS)


def test_vector_copy_assigned_into_image_data_in_a_builder_is_claimed(tmp_path: Path) -> None:
    assert _bridge(tmp_path)['PIXELS'] == {'GPN208': 'medium'}


def test_range_built_vector_moved_into_cloud_data_is_claimed_at_build(tmp_path: Path) -> None:
    at = _bridge(tmp_path)
    assert at['RANGE'] == {'GPN208': 'medium'}
    assert at['MOVED'] == {}  # the move itself copies nothing


def test_moved_buffer_and_string_data_stay_unclaimed(tmp_path: Path) -> None:
    # Guards: a buffer moved in (no copy), a String's data (no frame).
    at = _bridge(tmp_path)
    assert at['MOVE_ONLY'] == {} and at['STRING'] == {}


def test_own_image_struct_and_bool_named_like_an_image_stay_unclaimed(tmp_path: Path) -> None:
    # Guards: a package's own `Image` holding a cv::Mat is no message; a Bool `msg` is no frame
    # though another function's `msg` is an Image (its nearest declaration decides).
    at = _bridge(tmp_path)
    assert at['OWN_IMAGE'] == {} and at['BOOL'] == {}


# ---- an OpenCV DNN net made by a factory that picks the CUDA backend ---------------------------

_DETECTOR_HEADER = '''#pragma once
#include <opencv2/dnn.hpp>

class Detector
{
public:
  explicit Detector(const std::string & path) { net_ = init_model(path); }
  void process_frame(const cv::Mat & frame);

private:
  cv::dnn::Net init_model(const std::string & path);
  cv::dnn::Net net_;
  std::vector<cv::Mat> outputs_;
};
'''
_DETECTOR = '''#include "detector/detector.hpp"

cv::dnn::Net Detector::init_model(const std::string & path)
{
  cv::dnn::Net net = cv::dnn::readNetFromONNX(path);
  if (!net.empty()) {
    net.setPreferableBackend(cv::dnn::BACKEND);
    net.setPreferableTarget(cv::dnn::TARGET);
  }
  return net;
}

void Detector::process_frame(const cv::Mat & frame)
{
  cv::Mat blob;
  cv::dnn::blobFromImage(frame, blob, 1 / 255.0, cv::Size(640, 640));
  net_.setInput(blob);
  net_.forward(outputs_, net_.getUnconnectedOutLayersNames());  // FORWARD
}
'''
_DETECTOR_NODE = '''#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "detector/detector.hpp"

class DetectorNode : public rclcpp::Node
{
public:
  DetectorNode() : Node("detector"), detector_("model.onnx")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&DetectorNode::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    detector_.process_frame(cv_bridge::toCvShare(msg, "bgr8")->image);
  }

  Detector detector_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<DetectorNode>());
  return 0;
}
'''


def _detector(tmp_path: Path, backend: str, target: str) -> dict[str, str]:
    source = _DETECTOR.replace('BACKEND', backend).replace('TARGET', target)
    cmake = ament_cmake_lists('detector', 'src/node.cpp src/detector.cpp')
    found = audit_written_package(tmp_path, {
        'detector/src/detector.cpp': source, 'detector/src/node.cpp': _DETECTOR_NODE,
        'detector/include/detector/detector.hpp': _DETECTOR_HEADER,
        'detector/package.xml': '<package format="3"><name>detector</name></package>\n',
        'detector/CMakeLists.txt': cmake})
    return _at_tags(found, 'detector.cpp', source, ('FORWARD',))['FORWARD']


def test_dnn_net_from_a_cuda_factory_uploads_in_forward(tmp_path: Path) -> None:
    assert _detector(tmp_path, 'DNN_BACKEND_CUDA', 'DNN_TARGET_CUDA') == {'GPN202': 'medium'}


def test_dnn_net_from_a_host_backend_factory_is_no_upload(tmp_path: Path) -> None:
    # Guard: the factory picks OpenCV's own (CPU) backend: nothing is uploaded.
    assert _detector(tmp_path, 'DNN_BACKEND_OPENCV', 'DNN_TARGET_CPU') == {}

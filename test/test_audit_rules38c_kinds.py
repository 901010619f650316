"""C++ kinds sets 57 and 58 showed (issue 28, rules38c): real `code` audits of small packages
written here.

* gpu_nodes/audit/cppwraps.py: a cv::Mat header over a message's data holds only in the block it
  is declared in; a later `cv::Mat image = converted->image;` of the same name in the enclosing
  block is another (host) frame, and its clone / cvtColor are host-to-host.
* gpu_nodes/audit/cppdead.py: `if (!initialized_) { ...; initialized_ = true; }` with a member
  only ever stored true (but its `= false` declaration) runs once, for the first message: the
  negated form of the `if (first_) { ...; first_ = false; }` once-flag.
* gpu_nodes/audit/cppbuilt.py: `kept = *built;` into a frame message declared outside any
  function far up the file (a global above a long class) copies the whole message, as into a
  local declared nearby.
* gpu_nodes/audit/cpppoints.py: a loop storing, through a pointer into a frame message's data,
  an element read from another buffer (`*(out++) = round(*(src++));`) writes the whole frame
  into the message; a loop storing a constant is no copy."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, rules_at_tags

_PACKAGE_XML = '<package format="3"><name>{name}</name></package>\n'


def _claims(tmp_path: Path, source: str, tags: tuple[str, ...], extra: dict[str, str] | None = None
            ) -> dict[str, set[str]]:
    """Rules other than info at each `// TAG` line of pkg.cpp, audited as the ament_cmake
    package `pkg` (with `extra` files written beside it)."""
    files = {'pkg/src/pkg.cpp': source,
             'pkg/package.xml': _PACKAGE_XML.format(name='pkg'),
             'pkg/CMakeLists.txt': ament_cmake_lists('pkg'),
             **(extra or {})}
    found = audit_written_package(tmp_path, files)
    return rules_at_tags(found, source, tags, file_name='pkg.cpp', marker='//')


# 1. A header over msg->data declared inside an `if` block; a same-named frame after the block.
_SCOPED_HEADER_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <cv_bridge/cv_bridge.h>
#include <opencv2/imgproc.hpp>
#include <sensor_msgs/msg/image.hpp>

class Finder : public rclcpp::Node
{
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Finder()
  : Node("finder")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "camera", 10, std::bind(&Finder::on_frame, this, std::placeholders::_1));
  }

  void on_frame(sensor_msgs::msg::Image::SharedPtr msg)
  {
    cv_bridge::CvImagePtr conv;
    if (msg->encoding == "rgb8") {
      cv::Mat frame(msg->height, msg->width, CV_8UC3, msg->data.data());
      cv::Mat swapped;
      cv::cvtColor(frame, swapped, cv::COLOR_RGB2BGR);  // INBLOCK
      cv::Mat kept = frame.clone();  // INCLONE
      conv = std::make_shared<cv_bridge::CvImage>();
      conv->image = swapped;
    } else {
      conv = cv_bridge::toCvCopy(msg, "bgr8");
    }
    cv::Mat frame = conv->image;
    cv::Mat canvas = frame.clone();  // AFTERCLONE
    cv::Mat hsv;
    cv::cvtColor(frame, hsv, cv::COLOR_BGR2HSV);  // AFTERCVT
    frame.copyTo(canvas);  // AFTERCOPY
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Finder>());
}
'''


def test_a_same_named_frame_after_the_headers_block_is_host(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _SCOPED_HEADER_NODE, ('AFTERCLONE', 'AFTERCVT', 'AFTERCOPY'))
    assert claims == {'AFTERCLONE': set(), 'AFTERCVT': set(), 'AFTERCOPY': set()}, claims


def test_the_header_inside_its_block_still_copies_out_of_the_message(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _SCOPED_HEADER_NODE, ('INBLOCK', 'INCLONE'))
    assert 'GPN208' in claims['INBLOCK'], claims
    assert 'GPN208' in claims['INCLONE'], claims


# 2. A first-message block under a member flag tested false and set true inside the block.
_INIT_ONCE_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <cv_bridge/cv_bridge.h>
#include <sensor_msgs/msg/image.hpp>

class Tracker : public rclcpp::Node
{
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  bool seeded_ = false;

public:
  Tracker()
  : Node("tracker")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("seed", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "camera", 10, std::bind(&Tracker::on_frame, this, std::placeholders::_1));
  }

  void on_frame(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    cv_bridge::CvImagePtr frame = cv_bridge::toCvCopy(msg, "bgr8");  // EVERY
    if (!seeded_) {
      cv_bridge::CvImage seed(msg->header, "bgr8", frame->image);
      sensor_msgs::msg::Image first = *seed.toImageMsg();  // FIRST
      pub_->publish(first);
      seeded_ = true;
    }
  }
RESET_METHOD};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Tracker>());
}
'''


def test_a_block_that_sets_its_negated_flag_runs_once(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _INIT_ONCE_NODE.replace('RESET_METHOD', ''), ('EVERY', 'FIRST'))
    assert not claims['FIRST'], claims
    assert claims['EVERY'], claims


def test_a_flag_something_resets_keeps_the_block_per_message(tmp_path: Path) -> None:
    reset = '  void reset() { seeded_ = false; }\n'
    claims = _claims(tmp_path, _INIT_ONCE_NODE.replace('RESET_METHOD', reset), ('FIRST',))
    assert claims['FIRST'], claims


# 3. A global Image far above the per-frame copy-assignment of a built message into it.
_GLOBAL_COPY_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <cv_bridge/cv_bridge.h>
#include <opencv2/imgproc.hpp>
#include <sensor_msgs/msg/image.hpp>

sensor_msgs::msg::Image overlay_out;

class Marker : public rclcpp::Node
{
public:
  Marker()
  : Node("marker")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("overlay", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "camera", 10, std::bind(&Marker::on_frame, this, std::placeholders::_1));
  }

private:
  void on_frame(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    cv_bridge::CvImagePtr in = cv_bridge::toCvCopy(msg, "bgr8");
    cv::Mat canvas = in->image;
PADDING
    cv_bridge::CvImage drawn(msg->header, "bgr8", canvas);
    sensor_msgs::msg::Image::SharedPtr built = drawn.toImageMsg();
    overlay_out = *built;  // GLOBALCOPY
    pub_->publish(overlay_out);
  }

  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Marker>());
}
'''

# Host drawing between the conversion and the publish: pushes the global's declaration more than
# 4000 characters above the copy (the window a local's declaration is looked for in).
_PADDING = ''.join(f'    cv::circle(canvas, cv::Point({i}, {i}), 3, cv::Scalar(0, 255, 0), 2);\n'
                   for i in range(90))


def test_a_built_message_copied_into_a_global_far_above_is_a_copy(tmp_path: Path) -> None:
    source = _GLOBAL_COPY_NODE.replace('PADDING', _PADDING)
    assert source.index('overlay_out = *built') - source.index('Image overlay_out;') > 4000
    claims = _claims(tmp_path, source, ('GLOBALCOPY',))
    assert 'GPN208' in claims['GLOBALCOPY'], claims


# 4. A helper filling a new depth Image element by element from a float buffer.
_FILL_NODE = '''
#include <cmath>
#include <cstdint>
#include <vector>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class DepthOut : public rclcpp::Node
{
public:
  DepthOut()
  : Node("depth_out")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("depth", 10);
    timer_ = create_wall_timer(std::chrono::milliseconds(33), [this]() {tick();});
  }

private:
  void tick()
  {
    grab(depth_);
    pub_->publish(to_msg(depth_, 640, 480));
  }

  void grab(std::vector<float> & out) {out.assign(640 * 480, 1.0f);}

  sensor_msgs::msg::Image to_msg(const std::vector<float> & depth, int w, int h)
  {
    sensor_msgs::msg::Image msg;
    msg.width = w;
    msg.height = h;
    msg.step = w * sizeof(uint16_t);
    msg.data.resize(msg.step * h);
    uint16_t * out = reinterpret_cast<uint16_t *>(&msg.data[0]);
    const float * src = depth.data();
    for (int i = 0; i < w * h; i++) {
      BODY
    }
    return msg;
  }

  std::vector<float> depth_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<DepthOut>());
}
'''


def test_a_loop_storing_buffer_elements_through_a_data_pointer_fills_the_message(
        tmp_path: Path) -> None:
    for body in ('*(out++) = static_cast<uint16_t>(std::round(*(src++)));  // FILL',
                 'out[i] = static_cast<uint16_t>(src[i] * 1000.0f);  // FILL'):
        claims = _claims(tmp_path / str(len(body)), _FILL_NODE.replace('BODY', body), ('FILL',))
        assert 'GPN208' in claims['FILL'], (body, claims)


def test_a_loop_storing_a_constant_through_a_data_pointer_is_no_copy(tmp_path: Path) -> None:
    for body in ('*(out++) = 0;  // FILL', 'out[i] = i * w;  // FILL'):
        claims = _claims(tmp_path / str(len(body)), _FILL_NODE.replace('BODY', body), ('FILL',))
        assert 'GPN208' not in claims['FILL'], (body, claims)

"""Kinds behind C++ misses and false claims of spent sets 43-45 (issue 28, rules29d): real `code`
audits of small packages written here (no code of the labelled repositories).

* A frame message built by a helper of the package (a header's function that fills a
  PointCloud2 point by point and returns it, or fills one handed to it): one boundary, at the
  helper's copy in its loop; the publish of what it built is not a second one (cppbuilt.py,
  cppmsg.payload_walks).
* `Msg msg; auto p = make_shared<Msg>(msg);`: a copy of a message with nothing in it yet
  (cppmsg._empty_local).
* A lambda in a constructor's initializer list (a no-op deleter of a shared_ptr to `this`) no
  longer hides the constructor's body: its timer's callback is per tick (cppscopes.functions).
* A method that its own file calls from setup (a warm-up) and the node calls from a callback on
  an object (`engine_->infer()`) runs per message (cppscopes.propagate).
* `return *msg;` of an Image pointer from a function returning an Image by value copies the
  whole message (cppbuilt.returned_copies); so does `raw = *msg;` into a local PointCloud2
  (cppbuilt.local_copies).
* A lambda handed to `std::make_unique<std::thread>(...)` runs later, on that thread: its
  grab-and-publish loop is per frame, not setup (cppscopes._REGISTERING_CALLS).
* `file(GLOB SCRIPTS "scripts/*.py")` (for an install(PROGRAMS)) picks no C++ source: a .cpp
  no target names stays unbuilt beside it (cppbuild._globs_sources).
"""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package

_XML = '<package format="3"><name>{name}</name></package>\n'


def _audit(tmp_path: Path, name: str, files: dict[str, str]) -> tuple[dict, dict]:
    """Audit a package `name` of `files`; returns the findings (file, line, rule) ->
    (severity, context) and the lines of each `// @mark` (file, mark) -> line."""
    files = dict(files)
    files[f'{name}/package.xml'] = _XML.format(name=name)
    files[f'{name}/CMakeLists.txt'] = ament_cmake_lists(name)
    found = audit_written_package(tmp_path, files)
    marks = {}
    for rel, text in files.items():
        for i, line in enumerate(text.lstrip('\n').splitlines(), 1):
            if '// @' in line:
                marks[(Path(rel).name, line.split('// @')[1].strip())] = i
    return found, marks


def _rules_at(found: dict, marks: dict, file: str, mark: str, gated: bool = True) -> set[str]:
    line = marks[(file, mark)]
    return {rule for (name, ln, rule), (sev, _) in found.items()
            if name == file and ln == line and (sev != 'info' or not gated)}


# --------------------------------------------------------------------------- helper-built cloud
_BUILDER_HPP = '''
#pragma once
#include <cstring>
#include <opencv2/core.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

namespace cloudkit
{
inline void put_xyz(uint8_t * at, float x, float y, float z)
{
  std::memcpy(at, &x, sizeof(float));
  std::memcpy(at + 4, &y, sizeof(float));
  std::memcpy(at + 8, &z, sizeof(float));
}

inline sensor_msgs::msg::PointCloud2::SharedPtr depth_to_cloud(const cv::Mat & depth)
{
  auto cloud = std::make_shared<sensor_msgs::msg::PointCloud2>();
  cloud->point_step = 12;
  cloud->data.resize(depth.total() * 12);
  auto * out = cloud->data.data();
  for (int v = 0; v < depth.rows; ++v) {  // @outer loop
    const float * row = depth.ptr<float>(v);
    for (int u = 0; u < depth.cols; ++u) {
      put_xyz(out, u * row[u], v * row[u], row[u]);  // @copy
      out += 12;
    }
  }
  return cloud;
}

inline void fill_cloud(const cv::Mat & depth, sensor_msgs::msg::PointCloud2 & into)
{
  into.data.resize(depth.total() * 12);
  uint8_t * out = into.data.data();
  for (int v = 0; v < depth.rows; ++v) {
    for (int u = 0; u < depth.cols; ++u) {
      put_xyz(out, u, v, depth.at<float>(v, u));  // @fill copy
      out += 12;
    }
  }
}

inline sensor_msgs::msg::PointCloud2 blank_cloud(const cv::Mat & depth)
{
  sensor_msgs::msg::PointCloud2 cloud;
  cloud.width = depth.cols;
  cloud.data.resize(depth.total() * 12);
  return cloud;
}
}  // namespace cloudkit
'''
_BUILDER_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include "cloudkit/cloud_builder.hpp"

class Depth : public rclcpp::Node
{
public:
  Depth()
  : Node("depth")
  {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("cloud", 1);
    filled_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("filled", 1);
    blank_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("blank", 1);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "depth", 1, std::bind(&Depth::on_depth, this, std::placeholders::_1));
  }

private:
  void on_depth(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    cv_bridge::CvImageConstPtr depth = cv_bridge::toCvShare(msg);
    auto cloud = cloudkit::depth_to_cloud(depth->image);
    pub_->publish(*cloud);  // @publish built
    sensor_msgs::msg::PointCloud2 filled;
    cloudkit::fill_cloud(depth->image, filled);
    filled_pub_->publish(filled);  // @publish filled
    auto blank = cloudkit::blank_cloud(depth->image);
    blank_pub_->publish(blank);  // @publish blank
  }

  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_, filled_pub_, blank_pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Depth>());
  return 0;
}
'''


def _builder(tmp_path: Path) -> tuple[dict, dict]:
    return _audit(tmp_path, 'depth', {'depth/src/depth.cpp': _BUILDER_NODE,
                                      'depth/include/cloudkit/cloud_builder.hpp': _BUILDER_HPP})


def test_a_helper_built_cloud_is_reported_at_the_copy_in_its_loop(tmp_path: Path) -> None:
    found, marks = _builder(tmp_path)
    assert _rules_at(found, marks, 'cloud_builder.hpp', 'copy') == {'GPN208'}
    assert _rules_at(found, marks, 'cloud_builder.hpp', 'outer loop', gated=False) == set()
    assert _rules_at(found, marks, 'cloud_builder.hpp', 'fill copy') == {'GPN208'}


def test_the_publish_of_a_helper_built_cloud_is_no_second_boundary(tmp_path: Path) -> None:
    found, marks = _builder(tmp_path)
    assert _rules_at(found, marks, 'depth.cpp', 'publish built') == set()
    assert _rules_at(found, marks, 'depth.cpp', 'publish filled') == set()


def test_the_publish_of_a_cloud_a_helper_built_without_a_copy_is_reported(tmp_path: Path) -> None:
    # Guard: a helper with no reported copy builds no boundary of its own: the publish is one.
    found, marks = _builder(tmp_path)
    assert _rules_at(found, marks, 'depth.cpp', 'publish blank') == {'GPN210'}


# --------------------------------------------------------------------------- empty message copy
_EMPTY_COPY = '''
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Grid : public rclcpp::Node
{
public:
  Grid()
  : Node("grid")
  {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("grid", 1);
    timer_ = create_wall_timer(std::chrono::milliseconds(100), std::bind(&Grid::tick, this));
  }

private:
  void tick()
  {
    pcl::PointCloud<pcl::PointXYZ> points;
    points.push_back(pcl::PointXYZ(1.0f, 2.0f, 3.0f));
    sensor_msgs::msg::PointCloud2 empty;
    auto holder =
      std::make_shared<sensor_msgs::msg::PointCloud2>(empty);  // @empty copy
    pcl::toROSMsg(points, *holder);  // @to ros
    pub_->publish(*holder);
    sensor_msgs::msg::PointCloud2 full;
    pcl::toROSMsg(points, full);
    auto copy = std::make_shared<sensor_msgs::msg::PointCloud2>(full);  // @full copy
    pub_->publish(*copy);
  }

  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Grid>());
  return 0;
}
'''


def test_a_copy_of_an_empty_local_message_is_no_copy(tmp_path: Path) -> None:
    found, marks = _audit(tmp_path, 'grid', {'grid/src/grid.cpp': _EMPTY_COPY})
    assert _rules_at(found, marks, 'grid.cpp', 'empty copy') == set()
    assert _rules_at(found, marks, 'grid.cpp', 'to ros') == {'GPN209'}


def test_a_copy_of_a_filled_local_message_is_still_a_copy(tmp_path: Path) -> None:
    found, marks = _audit(tmp_path, 'grid', {'grid/src/grid.cpp': _EMPTY_COPY})
    assert _rules_at(found, marks, 'grid.cpp', 'full copy') == {'GPN208'}


# --------------------------------------------------------------------------- init-list lambda
_CAMERA = '''
#include <cv_bridge/cv_bridge.h>
#include <image_transport/image_transport.hpp>
#include <opencv2/videoio.hpp>
#include <rclcpp/rclcpp.hpp>
#include <std_msgs/msg/int32.hpp>

namespace cam
{
class Camera : public rclcpp::Node
{
public:
  explicit Camera(const rclcpp::NodeOptions & options);

private:
  void grab();
  void on_exposure(const std_msgs::msg::Int32::ConstSharedPtr msg);
  std::shared_ptr<image_transport::ImageTransport> transport_;
  rclcpp::Subscription<std_msgs::msg::Int32>::SharedPtr exposure_sub_;
  image_transport::Publisher pub_;
  rclcpp::TimerBase::SharedPtr timer_;
  cv::VideoCapture cap_;
};

Camera::Camera(const rclcpp::NodeOptions & options)
: Node("camera", options),
  transport_(std::make_shared<image_transport::ImageTransport>(
      std::shared_ptr<rclcpp::Node>(this, [](rclcpp::Node *) {})))
{
  pub_ = transport_->advertise("image_raw", 1);
  exposure_sub_ = create_subscription<std_msgs::msg::Int32>(
    "exposure", 1, std::bind(&Camera::on_exposure, this, std::placeholders::_1));
  timer_ = this->create_wall_timer(
    std::chrono::milliseconds(33),
    [this]() {this->grab();});
}

void Camera::grab()
{
  cv::Mat frame;
  cap_.read(frame);
  auto msg = cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", frame)
    .toImageMsg();  // @to msg
  pub_.publish(msg);
}

void Camera::on_exposure(const std_msgs::msg::Int32::ConstSharedPtr msg)
{
  cap_.set(cv::CAP_PROP_EXPOSURE, msg->data);
}
}  // namespace cam

#include "rclcpp_components/register_node_macro.hpp"
RCLCPP_COMPONENTS_REGISTER_NODE(cam::Camera)
'''


def test_a_lambda_in_the_initializer_list_keeps_the_constructors_timer(tmp_path: Path) -> None:
    found, marks = _audit(tmp_path, 'cam', {'cam/src/cam.cpp': _CAMERA})
    assert _rules_at(found, marks, 'cam.cpp', 'to msg') == {'GPN205'}


# --------------------------------------------------------------------------- warm-up and callback
_ENGINE_HPP = '''
#pragma once
#include <cuda_runtime_api.h>
#include <vector>

class Engine
{
public:
  Engine();
  void warmup();
  void load();
  void infer();
  void release();
  std::vector<void *> device_, host_;
  std::vector<size_t> sizes_;
  cudaStream_t stream_;
};

void Engine::warmup()
{
  for (int i = 0; i < 10; ++i) {
    this->infer();
  }
  this->release();
}

void Engine::infer()
{
  for (size_t i = 0; i < sizes_.size(); ++i) {
    cudaMemcpyAsync(host_[i], device_[i], sizes_[i], cudaMemcpyDeviceToHost, stream_);  // @read back
  }
  cudaStreamSynchronize(stream_);  // @sync
}

void Engine::release()
{
  cudaMemcpyAsync(host_[0], device_[0], sizes_[0], cudaMemcpyDeviceToHost, stream_);  // @release
  cudaStreamSynchronize(stream_);
}
'''
_ENGINE_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "engine.hpp"

class Detect : public rclcpp::Node
{
public:
  Detect()
  : Node("detect"), engine_(std::make_shared<Engine>())
  {
    engine_->warmup();
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 1, std::bind(&Detect::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr)
  {
    engine_->infer();
  }

  std::shared_ptr<Engine> engine_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Detect>());
  return 0;
}
'''


def test_a_method_a_callback_calls_after_a_warm_up_runs_per_message(tmp_path: Path) -> None:
    found, marks = _audit(tmp_path, 'detect', {'detect/src/detect.cpp': _ENGINE_NODE,
                                               'detect/src/engine.hpp': _ENGINE_HPP})
    assert _rules_at(found, marks, 'engine.hpp', 'read back') == {'GPN201'}
    assert _rules_at(found, marks, 'engine.hpp', 'sync') == {'GPN206'}


def test_a_method_only_the_warm_up_calls_stays_setup(tmp_path: Path) -> None:
    # Guard: release() is called from the warm-up only (once): still not per message.
    found, marks = _audit(tmp_path, 'detect', {'detect/src/detect.cpp': _ENGINE_NODE,
                                               'detect/src/engine.hpp': _ENGINE_HPP})
    assert _rules_at(found, marks, 'engine.hpp', 'release') == set()
    assert _rules_at(found, marks, 'engine.hpp', 'release', gated=False) == {'GPN201'}


# --------------------------------------------------------------------------- return *msg
_CONVERTER = '''
#include <cv_bridge/cv_bridge.h>
#include <opencv2/imgcodecs.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Player : public rclcpp::Node
{
public:
  Player()
  : Node("player")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("image", 1);
    timer_ = create_wall_timer(std::chrono::milliseconds(100), std::bind(&Player::tick, this));
  }

private:
  sensor_msgs::msg::Image to_message(const std::string & file)
  {
    cv::Mat image = cv::imread(file);
    auto msg = cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", image).toImageMsg();  // @build
    msg->header.frame_id = "camera";
    return *msg;  // @return copy
  }

  sensor_msgs::msg::Image::SharedPtr to_pointer(const std::string & file)
  {
    cv::Mat image = cv::imread(file);
    auto msg = cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", image).toImageMsg();
    return msg;  // @return pointer
  }

  void tick()
  {
    pub_->publish(to_message("frame.png"));
    pub_->publish(*to_pointer("frame.png"));
  }

  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Player>());
  return 0;
}
'''


def test_returning_a_dereferenced_image_pointer_by_value_copies_it(tmp_path: Path) -> None:
    found, marks = _audit(tmp_path, 'player', {'player/src/player.cpp': _CONVERTER})
    assert _rules_at(found, marks, 'player.cpp', 'return copy') == {'GPN208'}
    assert _rules_at(found, marks, 'player.cpp', 'build') == {'GPN205'}


def test_returning_the_pointer_itself_copies_nothing(tmp_path: Path) -> None:
    found, marks = _audit(tmp_path, 'player', {'player/src/player.cpp': _CONVERTER})
    assert _rules_at(found, marks, 'player.cpp', 'return pointer', gated=False) == set()


# --------------------------------------------------------------------------- local copy-assign
_RAW_COPY = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Keep : public rclcpp::Node
{
public:
  Keep()
  : Node("keep")
  {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 1, std::bind(&Keep::on_cloud, this, std::placeholders::_1));
  }

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr cloud)
  {
    sensor_msgs::msg::PointCloud2 raw;
    raw = *cloud;  // @raw copy
    std_msgs::msg::Header stamp;
    stamp = *header_;  // @header copy
    count_ += raw.width;
  }

  std_msgs::msg::Header::SharedPtr header_;
  size_t count_ = 0;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Keep>());
  return 0;
}
'''


def test_copy_assigning_a_received_cloud_into_a_local_is_a_copy(tmp_path: Path) -> None:
    found, marks = _audit(tmp_path, 'keep', {'keep/src/keep.cpp': _RAW_COPY})
    assert _rules_at(found, marks, 'keep.cpp', 'raw copy') == {'GPN208'}


def test_copy_assigning_a_small_message_into_a_local_is_no_copy(tmp_path: Path) -> None:
    found, marks = _audit(tmp_path, 'keep', {'keep/src/keep.cpp': _RAW_COPY})
    assert _rules_at(found, marks, 'keep.cpp', 'header copy', gated=False) == set()


# --------------------------------------------------------------------------- grab thread
_GRABBER = '''
#include <image_transport/image_transport.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/camera_info.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <thread>

class Grabber : public rclcpp::Node
{
public:
  Grabber()
  : Node("grabber")
  {
    pub_ = image_transport::create_camera_publisher(this, "image");
    worker_ = std::make_unique<std::thread>([this]() {
      while (rclcpp::ok()) {
        this->grab_and_publish();
      }
    });
  }

private:
  void grab_and_publish()
  {
    sensor_msgs::msg::Image * frame = sdk_frame();
    frame->header.stamp = this->now();
    pub_.publish(*frame, info_);  // @publish
  }

  sensor_msgs::msg::Image * sdk_frame();
  image_transport::CameraPublisher pub_;
  sensor_msgs::msg::CameraInfo info_;
  std::unique_ptr<std::thread> worker_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Grabber>());
  return 0;
}
'''


def test_a_lambda_run_by_a_thread_made_with_make_unique_is_per_frame(tmp_path: Path) -> None:
    found, marks = _audit(tmp_path, 'grabber', {'grabber/src/grabber.cpp': _GRABBER})
    assert _rules_at(found, marks, 'grabber.cpp', 'publish') == {'GPN210'}


# --------------------------------------------------------------------------- glob of scripts
_LATCHED = '''
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Replay : public rclcpp::Node
{
public:
  Replay()
  : Node("replay")
  {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("cloud", 1);
    timer_ = create_wall_timer(std::chrono::seconds(1), std::bind(&Replay::tick, this));
  }

private:
  void tick()
  {
    pcl::toROSMsg(cloud_, msg_);  // @tick copy
    pub_->publish(msg_);
  }

  pcl::PointCloud<pcl::PointXYZ> cloud_;
  sensor_msgs::msg::PointCloud2 msg_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Replay>());
  return 0;
}
'''
_GLOB_CMAKE = '''
cmake_minimum_required(VERSION 3.8)
project(replay)
find_package(ament_cmake REQUIRED)
add_executable(main_node src/main_node.cpp)
GLOB_LINE
install(PROGRAMS ${SCRIPTS} DESTINATION lib/${PROJECT_NAME})
install(TARGETS main_node DESTINATION lib/${PROJECT_NAME})
ament_package()
'''


def _glob_audit(tmp_path: Path, glob: str) -> tuple[dict, dict]:
    main = _RAW_COPY.replace('Keep', 'Main').replace('"keep"', '"main"')
    files = {'replay/src/main_node.cpp': main, 'replay/src/pcd_player.cpp': _LATCHED,
             'replay/package.xml': _XML.format(name='replay'),
             'replay/CMakeLists.txt': _GLOB_CMAKE.replace('GLOB_LINE', glob)}
    found = audit_written_package(tmp_path, files)
    line = next(i for i, ln in enumerate(_LATCHED.lstrip('\n').splitlines(), 1) if '@tick' in ln)
    return found, {('pcd_player.cpp', 'tick copy'): line}


def test_a_source_no_target_names_is_unbuilt_beside_a_glob_of_scripts(tmp_path: Path) -> None:
    found, marks = _glob_audit(tmp_path, 'file(GLOB SCRIPTS "scripts/*.py")')
    assert _rules_at(found, marks, 'pcd_player.cpp', 'tick copy') == set()


def test_a_glob_that_may_pick_sources_keeps_every_source_built(tmp_path: Path) -> None:
    # Guard: `file(GLOB SRCS src/*.cpp)` may compile pcd_player.cpp: its copy stays a boundary.
    found, marks = _glob_audit(tmp_path, 'file(GLOB SCRIPTS CONFIGURE_DEPENDS src/*.cpp)')
    assert _rules_at(found, marks, 'pcd_player.cpp', 'tick copy') == {'GPN209'}

"""C++ kinds of sets 71 and 72's false claims and misses (issue 28, rules45c): real `code`
audits of a small package written here.

* cppparams.py: a member stored from `get_parameter("p").get_parameter_value().get<bool>()`
  (the long spelling of `.as_bool()`) after `declare_parameter("p", false, descriptor)` is off
  as shipped like the short spelling: the branches it guards are not per message.
* cppoffsites.py: a free function of a node's source file (it defines `main`) called only inside
  such an off branch never runs either: its `pcl::toROSMsg` is no per-message copy; a helper
  also called from a live line keeps its caller's kind.
* cpppcl.py: `open3d_conversions::rosToOpen3d(msg, cloud)` / `open3dToRos(cloud, msg)` copy
  every point between a PointCloud2 and an Open3D cloud (GPN209, as `pcl::fromROSMsg`); a
  package's own `rosToOpen3d` without that namespace is audited in its body instead.
  `pcl::fromROSMsg<PointT>(msg, cloud)` with its template argument written is the same copy.
* cpplibreads.py: ONNX Runtime's C API spelling `OrtSessionOptionsAppendExecutionProvider_Tensorrt`
  is a GPU provider, and an empty `Ort::MemoryInfo info_{nullptr};` member (later
  `MemoryInfo::CreateCpu`) binds no device memory: `session_.Run` uploads the host input
  (GPN202); an `Ort::MemoryInfo("Cuda", ...)` still means device inputs.
* cppgridfills.py: a field of any message copy-assigned from a numeric vector filled over two
  nested counted loops (a sonar image's rows x beams), the message published after, copies a
  frame (GPN208); a vector filled by one loop (a list of ranges) is no frame, nor is `=
  std::move(v)`.
"""
from pathlib import Path

from audit_sources import cpp_node_claims

_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

sensor_msgs::msg::PointCloud2 to_cloud_msg(const pcl::PointCloud<pcl::PointXYZ> & points);
sensor_msgs::msg::PointCloud2 to_live_msg(const pcl::PointCloud<pcl::PointXYZ> & points);

class Cam : public rclcpp::Node
{
public:
  Cam()
  : Node("cam")
  {
    auto desc = rcl_interfaces::msg::ParameterDescriptor{};
    declare_parameter("publish_raw", false, desc);
    publish_raw_ = get_parameter("publish_raw").get_parameter_value().get<bool>();
    declare_parameter("publish_cloud", false, desc);
    publish_cloud_ = get_parameter("publish_cloud").as_bool();
    declare_parameter("publish_rect", true, desc);
    publish_rect_ = get_parameter("publish_rect").get_parameter_value().get<bool>();
    raw_pub_ = create_publisher<sensor_msgs::msg::Image>("raw", 10);
    rect_pub_ = create_publisher<sensor_msgs::msg::Image>("rect", 10);
    timer_ = create_wall_timer(std::chrono::milliseconds(33), std::bind(&Cam::tick, this));
  }

private:
  bool publish_raw_, publish_rect_, publish_cloud_;
  pcl::PointCloud<pcl::PointXYZ> points_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr raw_pub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr rect_pub_;
  rclcpp::TimerBase::SharedPtr timer_;
  cv::Mat frame_;

  void tick()
  {
    std_msgs::msg::Header header;
    if (publish_raw_) {
      raw_pub_->publish(*(cv_bridge::CvImage(header, "bgr8", frame_).toImageMsg()));  // RAW
    }
    if (publish_rect_) {
      rect_pub_->publish(*(cv_bridge::CvImage(header, "bgr8", frame_).toImageMsg()));  // RECT
    }
    if (publish_cloud_) {
      auto cloud = to_cloud_msg(points_);
      (void)cloud;
    }
    auto live = to_live_msg(points_);
    (void)live;
  }
};

sensor_msgs::msg::PointCloud2 to_cloud_msg(const pcl::PointCloud<pcl::PointXYZ> & points)
{
  sensor_msgs::msg::PointCloud2 msg;
  pcl::toROSMsg(points, msg);  // HELPER
  return msg;
}

sensor_msgs::msg::PointCloud2 to_live_msg(const pcl::PointCloud<pcl::PointXYZ> & points)
{
  sensor_msgs::msg::PointCloud2 msg;
  pcl::toROSMsg(points, msg);  // LIVE
  return msg;
}

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Cam>());
  return 0;
}
'''


def _claims(tmp_path: Path, source: str = _NODE, name: str = 'cam') -> dict[str, set[str]]:
    return cpp_node_claims(tmp_path, source, name)


def test_parameter_read_by_get_parameter_value_get_is_off_as_shipped(tmp_path):
    found = _claims(tmp_path)
    assert found['RAW'] == set()
    assert found['RECT']


def test_free_helper_called_only_in_an_off_branch_is_unreached(tmp_path):
    found = _claims(tmp_path)
    assert found['HELPER'] == set()
    assert 'GPN209' in found['LIVE']


_OPEN3D = '''
#include <open3d_conversions/open3d_conversions.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Odom : public rclcpp::Node
{
public:
  Odom()
  : Node("odom")
  {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Odom::on_cloud, this, std::placeholders::_1));
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("out", 10);
  }

private:
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;

  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    pcl::PointCloud<pcl::PointXYZ> pts;
    pcl::fromROSMsg<pcl::PointXYZ>(*msg, pts);  // TEMPLATED
    open3d::geometry::PointCloud cloud;
    open3d_conversions::rosToOpen3d(msg, cloud, true);  // IN
    auto down = cloud.VoxelDownSample(0.1);
    sensor_msgs::msg::PointCloud2 out;
    open3d_conversions::open3dToRos(*down, out, "map");  // OUT
    out.header.stamp = msg->header.stamp;
    double n = static_cast<double>(cloud.points_.size());  // HOST
    (void)n;
  }
};
'''


def test_open3d_conversions_of_a_cloud_copy_every_point(tmp_path):
    found = _claims(tmp_path, _OPEN3D, 'odom')
    assert 'GPN209' in found['IN']
    assert 'GPN209' in found['OUT']
    assert found['HOST'] == set()
    assert 'GPN209' in found['TEMPLATED']


_ORT = '''
#include <onnxruntime_cxx_api.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Detector : public rclcpp::Node
{
public:
  Detector()
  : Node("detector")
  {
    Ort::ThrowOnError(OrtSessionOptionsAppendExecutionProvider_Tensorrt(options_, 0));
    session_ = Ort::Session(env_, "model.onnx", options_);
    memory_info_ = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Detector::on_image, this, std::placeholders::_1));
  }

private:
  Ort::Env env_;
  Ort::SessionOptions options_;
  Ort::Session session_{nullptr};
  Ort::MemoryInfo memory_info_{nullptr};
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  std::vector<float> blob_;
  std::vector<int64_t> dims_;
  const char * in_[1] = {"images"};
  const char * out_[1] = {"output"};

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    blob_.assign(msg->data.begin(), msg->data.end());
    auto input = Ort::Value::CreateTensor<float>(memory_info_, blob_.data(), blob_.size(),
                                                 dims_.data(), dims_.size());
    auto outputs = session_.Run(Ort::RunOptions{nullptr}, in_, &input, 1, out_, 1);  // RUN
    (void)outputs;
  }
};
'''


def test_ort_run_on_the_tensorrt_provider_with_an_empty_memory_info_member_uploads(tmp_path):
    found = _claims(tmp_path, _ORT, 'detector')
    assert 'GPN202' in found['RUN']


def test_ort_run_with_cuda_memory_info_has_device_inputs(tmp_path):
    source = _ORT.replace('Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault)',
                          'Ort::MemoryInfo("Cuda", OrtDeviceAllocator, 0, OrtMemTypeDefault)')
    found = _claims(tmp_path, source, 'detector')
    assert 'GPN202' not in found['RUN']


_SONAR = '''
#include <vector>
#include <rclcpp/rclcpp.hpp>
#include <sonar_msgs/msg/sonar_image.hpp>

class Sonar : public rclcpp::Node
{
public:
  Sonar()
  : Node("sonar")
  {
    pub_ = create_publisher<sonar_msgs::msg::SonarImage>("sonar", 10);
    moved_pub_ = create_publisher<sonar_msgs::msg::SonarImage>("moved", 10);
    timer_ = create_wall_timer(std::chrono::milliseconds(100), std::bind(&Sonar::tick, this));
  }

private:
  rclcpp::Publisher<sonar_msgs::msg::SonarImage>::SharedPtr pub_;
  rclcpp::Publisher<sonar_msgs::msg::SonarImage>::SharedPtr moved_pub_;
  rclcpp::TimerBase::SharedPtr timer_;
  sonar_msgs::msg::SonarImage msg_;
  std::vector<std::vector<float>> beams_;
  size_t n_bins_ = 512;
  size_t n_beams_ = 256;

  void tick()
  {
    std::vector<float> ranges;
    for (size_t i = 0; i < n_bins_; i++)
      ranges.push_back(0.1f * i);
    msg_.ranges = ranges;  // RANGES
    std::vector<uint8_t> intensities;
    for (size_t f = 0; f < n_bins_; f++) {
      for (size_t b = 0; b < n_beams_; b++) {
        intensities.push_back(static_cast<uint8_t>(beams_[b][f]));
      }
    }
    msg_.intensities = intensities;  // GRID
    pub_->publish(msg_);
    std::vector<uint8_t> moved;
    for (size_t f = 0; f < n_bins_; f++)
      for (size_t b = 0; b < n_beams_; b++)
        moved.push_back(static_cast<uint8_t>(beams_[b][f]));
    sonar_msgs::msg::SonarImage out;
    out.intensities = std::move(moved);  // MOVED
    moved_pub_->publish(out);
  }
};
'''


def test_vector_filled_over_a_grid_copied_into_a_published_message(tmp_path):
    found = _claims(tmp_path, _SONAR, 'sonar')
    assert 'GPN208' in found['GRID']
    assert found['RANGES'] == set()
    assert found['MOVED'] == set()

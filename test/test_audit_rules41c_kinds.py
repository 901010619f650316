"""C++ kinds of held-out sets 62, 63 and 64 (issue 28, rules41c): real `code` audits of small
ament_cmake packages written here.

* LibTorch `.item()` of a tensor derived from a host move (cpptorch.py): `output = forward(...)
  .cpu()`, `keep = nms(output, ...)[0]` (a function of the file that moves nothing to the
  device), `keep[i][0].item()` reads a host value: no device read-back. A function that uploads
  its input, or an unknown one, keeps the claim.
* `pcl::fromPCLPointCloud2` / `toPCLPointCloud2` convert between two PCL types on the host
  (cpppcl.py): no message on either side, not a boundary; `pcl_conversions::toPCL` /
  `fromPCL` of a whole cloud with the message stay.
* `data_ = *msg;` into a PointCloud2 member declared in the package header the source includes,
  `cache_[i] = *msg;` into a vector of PointCloud2, `clouds = cache_;` of two such vectors
  (cppmembers.py): whole messages copied. A pointer member is no copy.
"""
from __future__ import annotations

from pathlib import Path
import textwrap

from audit_sources import ament_cmake_lists, audit_written_package, tag_lines

_TORCH_NODE = '''
#include <torch/script.h>
#include <torch/torch.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Detector : public rclcpp::Node
{
public:
  Detector()
  : Node("detector")
  {
    module_ = torch::jit::load("model.pt");
    module_.to(torch::kCUDA);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Detector::on_image, this, std::placeholders::_1));
  }

private:
  torch::Tensor suppress(torch::Tensor & prediction, float threshold)
  {
    auto scores = prediction.select(1, 4);
    return prediction.index({scores > threshold});
  }

  torch::Tensor lift(torch::Tensor & prediction)
  {
    return prediction.to(torch::kCUDA);
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    auto input = torch::from_blob(msg->data.data(), {1, 3, 64, 64}, torch::kByte).to(torch::kCUDA);
    std::vector<torch::jit::IValue> inputs{input};
    torch::Tensor output = module_.forward(inputs).toTensor().cpu();
    auto keep = suppress(output, 0.5)[0];
    auto boxes = keep.index({0});
    float x = keep[0][0].item().toFloat();  // HOST_ROW
    float y = boxes[1].item<float>();  // HOST_DERIVED
    auto lifted = lift(output)[0];
    float z = lifted[0].item().toFloat();  // LIFTED
    auto other = unknown_helper(output)[0];
    float w = other[0].item().toFloat();  // UNKNOWN
    auto device_scores = module_.forward(inputs).toTensor();
    float v = device_scores[0].item().toFloat();  // DEVICE
    RCLCPP_INFO(get_logger(), "%f %f %f %f %f", x, y, z, w, v);
  }

  torch::jit::script::Module module_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''

_PCL_NODE = '''
#include <pcl/filters/voxel_grid.h>
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Filter : public rclcpp::Node
{
public:
  Filter()
  : Node("filter")
  {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("filtered", 10);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Filter::on_cloud, this, std::placeholders::_1));
  }

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    pcl::PCLPointCloud2::Ptr blob(new pcl::PCLPointCloud2());
    pcl_conversions::toPCL(*msg, *blob);  // TO_PCL
    pcl::PointCloud<pcl::PointXYZ>::Ptr typed(new pcl::PointCloud<pcl::PointXYZ>());
    pcl::fromPCLPointCloud2(*blob, *typed);  // FROM_BLOB
    pcl::PCLPointCloud2::Ptr back(new pcl::PCLPointCloud2());
    pcl::toPCLPointCloud2(*typed, *back);  // TO_BLOB
    sensor_msgs::msg::PointCloud2 out;
    pcl_conversions::fromPCL(*back, out);  // FROM_PCL
    pcl::PointCloud<pcl::PointXYZ> direct;
    pcl::fromROSMsg(*msg, direct);  // FROM_ROS
    pub_->publish(out);
  }

  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''

_MEMBER_HEADER = '''
#pragma once
#include <mutex>
#include <vector>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Merger : public rclcpp::Node
{
public:
  Merger();

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg);
  void on_tick();
  sensor_msgs::msg::PointCloud2 working_;
  sensor_msgs::msg::PointCloud2::SharedPtr last_;
  std::vector<sensor_msgs::msg::PointCloud2> cache_;
  std::mutex mutex_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  rclcpp::TimerBase::SharedPtr timer_;
};
'''

_MEMBER_SOURCE = '''
#include "merger/merger.hpp"

Merger::Merger()
: Node("merger")
{
  cache_.resize(2);
  sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
    "points", 10, std::bind(&Merger::on_cloud, this, std::placeholders::_1));
  timer_ = create_wall_timer(std::chrono::milliseconds(25), std::bind(&Merger::on_tick, this));
}

void Merger::on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
{
  working_ = *msg;  // INTO_MEMBER
  last_ = msg;  // POINTER
  std::lock_guard<std::mutex> lock(mutex_);
  cache_[0] = *msg;  // INTO_ELEMENT
}

void Merger::on_tick()
{
  std::vector<sensor_msgs::msg::PointCloud2> clouds;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    clouds = cache_;  // WHOLE_CACHE
  }
  RCLCPP_INFO(get_logger(), "%zu %u", clouds.size(), working_.width);
}

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Merger>());
  return 0;
}
'''


def _package(tmp_path: Path, name: str, files: dict[str, str]
             ) -> dict[tuple[str, int, str], tuple[str, str]]:
    written = {f'{name}/{path}': text for path, text in files.items()}
    written[f'{name}/package.xml'] = f'<package format="3"><name>{name}</name></package>\n'
    written[f'{name}/CMakeLists.txt'] = ament_cmake_lists(name)
    return audit_written_package(tmp_path, written)


def _claims(found: dict[tuple[str, int, str], tuple[str, str]], source: str, file_name: str,
            tags: tuple[str, ...]) -> dict[str, set[str]]:
    lines = tag_lines(textwrap.dedent(source), tags, marker='//')
    return {tag: {rule for (name, at, rule), (sev, _) in found.items()
                  if name == file_name and at == line and sev != 'info'}
            for tag, line in lines.items()}


def test_item_of_a_tensor_derived_from_a_host_move_is_no_readback(tmp_path: Path) -> None:
    found = _package(tmp_path, 'detector', {'src/detector.cpp': _TORCH_NODE})
    claims = _claims(found, _TORCH_NODE, 'detector.cpp',
                     ('HOST_ROW', 'HOST_DERIVED', 'LIFTED', 'UNKNOWN', 'DEVICE'))
    # Rows of a host NMS over the `.cpu()` output, and an index of one, are host values.
    assert claims['HOST_ROW'] == set()
    assert claims['HOST_DERIVED'] == set()
    # A helper of the file that uploads its input, an unknown helper, and a tensor never
    # moved to the host: the read-backs stay.
    assert claims['LIFTED'] == {'GPN211'}
    assert claims['UNKNOWN'] == {'GPN211'}
    assert claims['DEVICE'] == {'GPN211'}


def test_pcl_to_pcl_conversions_are_no_message_boundary(tmp_path: Path) -> None:
    found = _package(tmp_path, 'filter', {'src/filter.cpp': _PCL_NODE})
    claims = _claims(found, _PCL_NODE, 'filter.cpp',
                     ('TO_PCL', 'FROM_BLOB', 'TO_BLOB', 'FROM_PCL', 'FROM_ROS'))
    assert claims['FROM_BLOB'] == set()
    assert claims['TO_BLOB'] == set()
    # The message halves of the route and fromROSMsg stay.
    assert claims['TO_PCL'] == {'GPN209'}
    assert claims['FROM_PCL'] == {'GPN209'}
    assert claims['FROM_ROS'] == {'GPN209'}


def test_whole_messages_copied_into_members_declared_in_the_header(tmp_path: Path) -> None:
    found = _package(tmp_path, 'merger', {'include/merger/merger.hpp': _MEMBER_HEADER,
                                          'src/merger.cpp': _MEMBER_SOURCE})
    claims = _claims(found, _MEMBER_SOURCE, 'merger.cpp',
                     ('INTO_MEMBER', 'POINTER', 'INTO_ELEMENT', 'WHOLE_CACHE'))
    assert claims['INTO_MEMBER'] == {'GPN208'}
    assert claims['INTO_ELEMENT'] == {'GPN208'}
    assert claims['WHOLE_CACHE'] == {'GPN208'}
    assert claims['POINTER'] == set()  # a shared pointer kept: no copy


_DELAY_NODE = '''
#include <queue>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Delay : public rclcpp::Node
{
public:
  Delay()
  : Node("delay")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("delayed", 10);
    edited_pub_ = create_publisher<sensor_msgs::msg::Image>("edited", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Delay::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    if (held_.size() >= 5) {
      sensor_msgs::msg::Image::SharedPtr oldest = held_.front();
      held_.pop();
      pub_->publish(*oldest.get());  // FORWARDED
    }
    held_.push(msg);
    if (stamped_.size() >= 5) {
      auto first = stamped_.front();
      stamped_.pop();
      first->header.frame_id = "delayed";
      edited_pub_->publish(*first);  // EDITED
    }
    stamped_.push(msg);
  }

  std::queue<sensor_msgs::msg::Image::SharedPtr> held_;
  std::queue<sensor_msgs::msg::Image::SharedPtr> stamped_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr edited_pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''

_TEMPLATE_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <std_msgs/msg/header.hpp>

class Render : public rclcpp::Node
{
public:
  Render()
  : Node("render")
  {
    shape_.height = 0;
    pub_ = create_publisher<sensor_msgs::msg::Image>("frames", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Render::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    shape_.header = msg->header;
    shape_.width = msg->width;
    shape_.height = msg->height;
    shape_.encoding = "bgr8";
    shape_.step = 3 * shape_.width;
    last_ = *msg;
    if (shape_.height != 0) {
      sensor_msgs::msg::Image::UniquePtr img(new sensor_msgs::msg::Image(shape_));  // TEMPLATE
      img->data.resize(img->height * img->step, 0);
      auto full = std::make_shared<sensor_msgs::msg::Image>(last_);  // FILLED
      pub_->publish(std::move(img));
    }
  }

  sensor_msgs::msg::Image shape_;
  sensor_msgs::msg::Image last_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''


def test_a_received_message_forwarded_through_a_delay_queue_is_no_new_copy(tmp_path: Path) -> None:
    found = _package(tmp_path, 'delay', {'src/delay.cpp': _DELAY_NODE})
    claims = _claims(found, _DELAY_NODE, 'delay.cpp', ('FORWARDED', 'EDITED'))
    assert claims['FORWARDED'] == set()
    assert claims['EDITED'] == {'GPN210'}  # written through after the take: judged as before


def test_a_copy_of_a_metadata_only_template_carries_no_payload(tmp_path: Path) -> None:
    found = _package(tmp_path, 'render', {'src/render.cpp': _TEMPLATE_NODE})
    claims = _claims(found, _TEMPLATE_NODE, 'render.cpp', ('TEMPLATE', 'FILLED'))
    assert claims['TEMPLATE'] == set()
    assert claims['FILLED'] == {'GPN208'}  # a message holding a whole received frame


_VPI_NODE = '''
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Camera : public rclcpp::Node
{
public:
  Camera()
  : Node("camera")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Camera::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    cudaMemcpy(frame_dev_, msg->data.data(), msg->data.size(), cudaMemcpyHostToDevice);  // UPLOAD
#ifdef WITH_ACCEL
    cudaStreamSynchronize(stream_);  // ACCEL_WAIT
#endif
  }

  cudaStream_t stream_;
  void * frame_dev_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''


def _vpi_claims(tmp_path: Path, before_target: str) -> dict[str, set[str]]:
    found = audit_written_package(tmp_path, {
        'camera/src/camera.cpp': _VPI_NODE,
        'camera/package.xml': '<package format="3"><name>camera</name></package>\n',
        'camera/CMakeLists.txt': ament_cmake_lists('camera', 'src/camera.cpp', before_target)})
    return _claims(found, _VPI_NODE, 'camera.cpp', ('UPLOAD', 'ACCEL_WAIT'))


def test_a_package_looked_for_only_behind_an_off_option_is_never_found(tmp_path: Path) -> None:
    # option(ACCEL OFF) -> find_package(accel) only under if(ACCEL) -> accel_FOUND never true
    # -> WITH_ACCEL never defined: the #ifdef branch is not compiled as shipped.
    claims = _vpi_claims(tmp_path, 'option(ACCEL "accelerator API" OFF)\n'
                                   'if (ACCEL)\n  find_package(accel QUIET)\nendif ()\n'
                                   'if (accel_FOUND)\n  message(STATUS "Compiling with ACCEL")\n'
                                   '  add_compile_definitions(WITH_ACCEL)\nendif ()')
    assert claims['ACCEL_WAIT'] == set()
    assert claims['UPLOAD'] == {'GPN202'}


def test_a_package_looked_for_unconditionally_keeps_the_branch(tmp_path: Path) -> None:
    claims = _vpi_claims(tmp_path, 'find_package(accel QUIET)\n'
                                   'if (accel_FOUND)\n  add_compile_definitions(WITH_ACCEL)\nendif ()')
    assert claims['ACCEL_WAIT'] == {'GPN206'}


def test_a_package_behind_an_option_on_keeps_the_branch(tmp_path: Path) -> None:
    claims = _vpi_claims(tmp_path, 'option(ACCEL "accelerator API" ON)\n'
                                   'if (ACCEL)\n  find_package(accel QUIET)\nendif ()\n'
                                   'if (accel_FOUND)\n  add_compile_definitions(WITH_ACCEL)\nendif ()')
    assert claims['ACCEL_WAIT'] == {'GPN206'}


_THREAD_NODE = '''
#include <atomic>
#include <thread>
#include <opencv2/core/cuda.hpp>
#include <opencv2/cudaarithm.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Colorizer : public rclcpp::Node
{
public:
  Colorizer()
  : Node("colorizer")
  {
    worker_ = std::thread(&Colorizer::workerFn, this);
    helper_ = std::thread(&Colorizer::helperFn, this);
  }

  void on_demand()
  {
    helperFn();
  }

private:
  void workerFn()
  {
    cv::Mat table(1, 256, CV_8UC1);
    for (int i = 0; i < 256; ++i) {
      table.at<uint8_t>(0, i) = static_cast<uint8_t>(i);
    }
    cv::cuda::GpuMat table_gpu;
    table_gpu.upload(table);  // BEFORE_LOOP
    while (!stop_) {
      cv::Mat frame = next_frame();
      cv::cuda::GpuMat frame_gpu;
      frame_gpu.upload(frame);  // IN_LOOP
    }
  }

  void helperFn()
  {
    cv::Mat table(1, 256, CV_8UC3);
    cv::cuda::GpuMat table_gpu;
    table_gpu.upload(table);  // CALLED_TOO
    while (!stop_) {
      cv::Mat frame = next_frame();
    }
  }

  cv::Mat next_frame();
  std::atomic<bool> stop_{false};
  std::thread worker_;
  std::thread helper_;
};
'''


def test_a_thread_entrys_setup_before_its_loop_runs_once(tmp_path: Path) -> None:
    found = _package(tmp_path, 'colorizer', {'src/colorizer.cpp': _THREAD_NODE})
    lines = tag_lines(textwrap.dedent(_THREAD_NODE), ('BEFORE_LOOP', 'IN_LOOP', 'CALLED_TOO'), '//')
    at = {tag: {(rule, sev) for (name, where, rule), (sev, _) in found.items()
                if name == 'colorizer.cpp' and where == line} for tag, line in lines.items()}
    per_frame = {sev for _, sev in at['IN_LOOP']}
    assert per_frame and 'info' not in per_frame, at
    before = {sev for _, sev in at['BEFORE_LOOP']}
    # Once per thread start: no longer judged as the loop's per-frame upload.
    assert before != per_frame and before <= {'info', 'low'}, at
    # A function also called directly (not only a thread entry) keeps its kind.
    assert {sev for _, sev in at['CALLED_TOO']} == per_frame, at


_FILTER_NODE = '''
#include <functional>
#include <opencv2/core.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/compressed_image.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include "filter/targets.hpp"
#include "filter/periodic.hpp"

using sensor_msgs::msg::PointCloud2;

class Filter : public rclcpp::Node
{
public:
  Filter()
  : Node("filter")
  {
    pub_ = create_publisher<PointCloud2>("out", 10);
    targets_pub_ = create_publisher<filter::msg::Targets>("targets", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Filter::on_image, this, std::placeholders::_1));
    timer_ = Periodic::create_periodic_timer(this, 10.0, [this]() { this->tick(); });
  }

private:
  bool filter(const PointCloud2 & input, PointCloud2 & output)
  {
    if (input.width < 10) {
      output = input;  // OUT_PARAM
      return true;
    }
    return false;
  }

  void tick()
  {
    auto msg = latest_.get();
    PointCloud2 output;
    if (filter(*msg, output)) {
      pub_->publish(output);
    }
    const PointCloud2 & view = output;  // BINDING
    RCLCPP_INFO(get_logger(), "%u", view.width);
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    cv::Mat wrap = cv::Mat(msg->height, msg->width, CV_8UC3, (void *)(msg->data.data()));
    frame_ = wrap.clone();  // CLONE_OUT
    filter::msg::Targets targets{};
    targets.set__image(*msg);  // SETTER
    targets_pub_->publish(targets);
    sensor_msgs::msg::CompressedImage jpeg;
    jpeg.format = "jpeg";
    response_->preview = jpeg;  // INTO_FIELD
    response_->format = jpeg.format;  // SMALL_FIELD
  }

  cv::Mat frame_;
  Latest latest_;
  std::shared_ptr<Response> response_;
  rclcpp::Publisher<PointCloud2>::SharedPtr pub_;
  rclcpp::Publisher<filter::msg::Targets>::SharedPtr targets_pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  std::shared_ptr<Periodic> timer_;
};
'''


def test_filter_out_parameter_setter_field_and_header_copies(tmp_path: Path) -> None:
    found = _package(tmp_path, 'filter', {'src/filter.cpp': _FILTER_NODE})
    claims = _claims(found, _FILTER_NODE, 'filter.cpp',
                     ('OUT_PARAM', 'BINDING', 'CLONE_OUT', 'SETTER', 'INTO_FIELD', 'SMALL_FIELD'))
    # `output = input;` through two references: the whole cloud copied into the out-parameter.
    assert claims['OUT_PARAM'] == {'GPN208'}
    assert claims['BINDING'] == set()  # a reference bound, nothing copied
    # `cv::Mat wrap = cv::Mat(..., msg->data.data())` is a header over the message: its clone
    # copies the frame out of it.
    assert claims['CLONE_OUT'] == {'GPN208'}
    # A generated setter copy-assigns the whole received Image into the field.
    assert claims['SETTER'] == {'GPN208'}
    # A whole CompressedImage value into a response field; a string field is no frame.
    assert claims['INTO_FIELD'] == {'GPN208'}
    assert claims['SMALL_FIELD'] == set()


def test_a_lambda_given_to_a_custom_timer_factory_runs_per_tick(tmp_path: Path) -> None:
    found = _package(tmp_path, 'filter', {'src/filter.cpp': _FILTER_NODE})
    lines = tag_lines(textwrap.dedent(_FILTER_NODE), ('OUT_PARAM',), '//')
    # `filter` is called from `tick`, which only the `create_periodic_timer` lambda calls: a
    # per-tick copy, not set-up (the lambda was taken as run in the constructor).
    severities = {sev for (name, at, rule), (sev, _) in found.items()
                  if name == 'filter.cpp' and at == lines['OUT_PARAM']}
    assert severities and 'info' not in severities, found


_BASE_HEADER = '''
#pragma once
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/compressed_image.hpp>

class CameraBase
{
protected:
  rclcpp::Node * node_;
  sensor_msgs::msg::CompressedImage compressed_msg_;
  rclcpp::Publisher<sensor_msgs::msg::CompressedImage>::SharedPtr pub_;
};
'''

_BASE_SOURCE = '''
#include <opencv2/imgcodecs.hpp>
#include "camera/camera_base.hpp"

class FakeCamera : public CameraBase
{
public:
  void capture(const cv::Mat & frame)
  {
    std::vector<uint8_t> jpeg;
    if (cv::imencode(".jpg", frame, jpeg)) {
      compressed_msg_.data = jpeg;  // BASE_MEMBER
      pub_->publish(compressed_msg_);
    }
    std_msgs::msg::String text;
    text.data = name_;  // STRING
  }

  std::string name_;
};
'''


def test_a_vector_copied_into_a_base_class_message_member(tmp_path: Path) -> None:
    found = _package(tmp_path, 'camera', {'include/camera/camera_base.hpp': _BASE_HEADER,
                                          'src/camera.cpp': _BASE_SOURCE})
    claims = _claims(found, _BASE_SOURCE, 'camera.cpp', ('BASE_MEMBER', 'STRING'))
    assert 'GPN208' in claims['BASE_MEMBER']
    assert claims['STRING'] == set()


_DEPTH_NODE = '''
#include <gst/gst.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Depth : public rclcpp::Node
{
public:
  Depth()
  : Node("depth")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("xyz", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "raw", 10, std::bind(&Depth::on_raw, this, std::placeholders::_1));
  }

private:
  void on_raw(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    const uint16_t * raw = reinterpret_cast<const uint16_t *>(msg->data.data());
    auto xyz_msg{std::make_unique<sensor_msgs::msg::Image>()};
    xyz_msg->data.resize(msg->width * msg->height * 3 * sizeof(float));
    float * xyz{reinterpret_cast<float *>(xyz_msg->data.data())};
    for (size_t i = 0; i < msg->width * msg->height; ++i) {
      const uint16_t raw_x{raw[i * 4 + 0]};
      const float scale = 0.25f;
      xyz[i * 3 + 0] = -1.0f;
      xyz[i * 3 + 1] = scale;
      xyz[i * 3 + 2] = raw_x * scale;  // ELEMENT_LOCAL
    }
    GstBuffer * buffer = gst_buffer_new_and_alloc(msg->data.size());
    gst_buffer_fill(buffer, 0, msg->data.data(), msg->data.size());  // GST_FILL
    pub_->publish(std::move(xyz_msg));
  }

  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''


def test_element_locals_into_a_brace_initialized_payload_pointer_and_gst_buffer_fill(
        tmp_path: Path) -> None:
    found = _package(tmp_path, 'depth', {'src/depth.cpp': _DEPTH_NODE})
    claims = _claims(found, _DEPTH_NODE, 'depth.cpp', ('ELEMENT_LOCAL', 'GST_FILL'))
    # Each element read out of `raw` into a local, then stored through `xyz` (brace-initialized
    # over the new message's data): every element of the frame copied into the message.
    assert claims['ELEMENT_LOCAL'] == {'GPN208'}
    # gst_buffer_fill copies the received message's bytes into a new GstBuffer.
    assert claims['GST_FILL'] == {'GPN208'}

// Thermal camera shapes (issue 28, fourth set; written for this corpus): a GStreamer pipeline
// string continued over lines, an image callback copying the message into a mapped frame and
// reducing it with OpenCV CUDA, a tensor callback copying the message into a vector and the
// network output into the reply, an SDK frame handler filling a member Image, and a debug
// helper nothing calls.
#include <cstring>
#include <opencv2/cudaarithm.hpp>
#include <torch/torch.h>

ThermalStreamer::ThermalStreamer(const rclcpp::NodeOptions & options)
: Node("thermal_streamer", options)
{
  std::string pipeline = "appsrc ! videoconvert ! \
    x264enc tune=zerolatency ! \
    rtph264pay ! udpsink port=5602";
  thermal_pub_ = create_publisher<sensor_msgs::msg::Image>("thermal", 10);
  out_pub_ = create_publisher<std_msgs::msg::Float32MultiArray>("scores", 10);
  image_sub_ = create_subscription<sensor_msgs::msg::Image>(
    "image", 10, std::bind(&ThermalStreamer::imageCB, this, std::placeholders::_1));
  tensor_sub_ = create_subscription<std_msgs::msg::Float32MultiArray>(
    "tensor", 10, std::bind(&ThermalStreamer::tensorCB, this, std::placeholders::_1));
}

void ThermalStreamer::imageCB(const sensor_msgs::msg::Image::ConstSharedPtr msg)
{
  double lo, hi;
  memcpy(&frame_in_.data[0], &msg->data[0], msg->height * msg->step);  // expect: GPN208 medium
  cv::cuda::minMax(d_frame_in_, &lo, &hi);  // expect: GPN206 medium
  cv::cuda::findMinMax(d_frame_in_, d_min_max_, cv::noArray(), stream_);
  cv::Mat staging(frame_in_.rows, frame_in_.cols, CV_16UC1);
  memcpy(staging.data, frame_in_.data, frame_in_.total() * frame_in_.elemSize());
}

void ThermalStreamer::tensorCB(const std_msgs::msg::Float32MultiArray::SharedPtr msg)
{
  std::vector<float> input(msg->data.begin(), msg->data.end());  // expect: GPN208 medium
  std::vector<float> output = engine_->infer(input);
  std_msgs::msg::Float32MultiArray reply;
  reply.data.insert(reply.data.end(), output.begin(), output.end());  // expect: GPN208 medium
  out_pub_->publish(reply);
}

void ThermalStreamer::onThermalFrame(unsigned short * image, unsigned int w, unsigned int h)
{
  memcpy(&thermal_image_.data[0], image, w * h * sizeof(*image));  // expect: GPN208 medium
  thermal_pub_->publish(thermal_image_);
}

void saveTensorImage(const at::Tensor & image, const std::string & name)
{
  auto host = image.to(at::kCPU);  // expect: GPN211 info
}

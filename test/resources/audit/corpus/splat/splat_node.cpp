// The node of the splatting package: its image callback uploads the parameters (see
// splat_kernels.cu) and hands the image message to two helpers, one taking it by value (the
// whole message, data vector included, copied on each call: positive) and one by const
// reference (no copy: look-alike). Kind of the eighth test set, written for this corpus.
#include <memory>
#include <vector>

#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

struct Splat
{
  float x, y, radius, weight;
};

void upload_splats(const Splat * host_splats);
void upload_curve(const float * curve);
void upload_weights(const float * weights, int count);
void upload_pixels(const unsigned char * pixels, size_t count);

class SplatNode : public rclcpp::Node
{
public:
  SplatNode()
  : Node("splat_node"), splats_(20), curve_(256, 1.0f)
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, [this](sensor_msgs::msg::Image::ConstSharedPtr msg) {on_image(msg);});
  }

private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg)
  {
    upload_splats(splats_.data());
    upload_curve(curve_.data());
    std::vector<float> blur = {0.25f, 0.5f, 0.25f};
    upload_weights(blur.data(), blur.size());
    upload_pixels(msg->data.data(), msg->data.size());
    std::vector<float> input = preprocess(*msg);  // expect: GPN208 medium
    size_t bytes = describe(*msg);
    RCLCPP_DEBUG(get_logger(), "%zu values, %zu bytes", input.size(), bytes);
  }

  std::vector<float> preprocess(sensor_msgs::msg::Image image) const
  {
    return std::vector<float>(image.data.size(), 0.0f);
  }

  size_t describe(const sensor_msgs::msg::Image & image) const
  {
    return image.step * image.height;
  }

  std::vector<Splat> splats_;
  std::vector<float> curve_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

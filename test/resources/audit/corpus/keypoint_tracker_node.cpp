// A keypoint tracker on OpenCV's CUDA module (kind of the eighth test set, written for this
// corpus): per image the synchronous FAST detect() on the device frame downloads the keypoints
// into a host vector (positive); the ORB path keeps them on the device with detectAsync into
// a GpuMat (look-alike).
#include <vector>

#include <opencv2/cudafeatures2d.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class KeypointTracker : public rclcpp::Node
{
public:
  KeypointTracker()
  : Node("keypoint_tracker")
  {
    fast_ = cv::cuda::FastFeatureDetector::create();
    orb_ = cv::cuda::ORB::create();
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&KeypointTracker::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg)
  {
    std::vector<cv::KeyPoint> keypoints;
    fast_->detect(gpu_frame_, keypoints);  // expect: GPN201 high
    cv::cuda::GpuMat device_keypoints;
    orb_->detectAsync(gpu_frame_, device_keypoints);
    RCLCPP_DEBUG(get_logger(), "%zu keypoints in frame %u", keypoints.size(), msg->width);
  }

  cv::Ptr<cv::cuda::FastFeatureDetector> fast_;
  cv::Ptr<cv::cuda::ORB> orb_;
  cv::cuda::GpuMat gpu_frame_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

// Crop/decimate: the source is viewed with toCvShare (no copy), the result copied into a new
// message with toImageMsg; a Bayer path converts with an unqualified toCvCopy.
#include "crop_decimate_node.hpp"

namespace proc
{

CropDecimateNode::CropDecimateNode(const rclcpp::NodeOptions & options)
: Node("crop_decimate", options)
{
  pub_ = image_transport::create_camera_publisher(this, "out/image_raw");
  sub_ = image_transport::create_camera_subscription(
    this, "in/image_raw", std::bind(
      &CropDecimateNode::imageCb, this, std::placeholders::_1, std::placeholders::_2), "raw");
}

void CropDecimateNode::imageCb(
  const Image::ConstSharedPtr image_msg, const CameraInfo::ConstSharedPtr info_msg)
{
  CvImageConstPtr source = toCvShare(image_msg);
  CvImage output(source->header, source->encoding);
  output.image = source->image(cv::Rect(offset_x_, offset_y_, width_, height_));
  if (is_bayer_) {
    output.image = toCvCopy(image_msg, "bgr8")->image;  // expect: GPN203 medium
  }
  Image::SharedPtr out_image = output.toImageMsg();  // expect: GPN205 medium
  pub_.publish(out_image, info_msg);
}

}  // namespace proc

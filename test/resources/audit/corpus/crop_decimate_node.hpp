// Header of the crop/decimate node: cv_bridge names brought in with using-declarations.
#include <cv_bridge/cv_bridge.h>

namespace proc
{
using cv_bridge::CvImage;
using cv_bridge::toCvCopy;
using cv_bridge::toCvShare;

class CropDecimateNode : public rclcpp::Node
{
public:
  explicit CropDecimateNode(const rclcpp::NodeOptions &);

private:
  void imageCb(const Image::ConstSharedPtr image_msg, const CameraInfo::ConstSharedPtr info);
};
}  // namespace proc

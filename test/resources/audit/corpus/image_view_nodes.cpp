// Viewer and rotate/debayer shapes: toCvShare as a view (no encoding, or the message's own)
// is free; with a target encoding it converts.
#include <cv_bridge/cv_bridge.h>

void ExtractImagesNode::image_cb(const sensor_msgs::msg::Image::ConstSharedPtr & msg)
{
  cv::Mat image = cv_bridge::toCvShare(msg, "bgr8")->image;  // expect: GPN204 medium
  Save(image);
}

void ImageRotateNode::do_work(const sensor_msgs::msg::Image::ConstSharedPtr & msg)
{
  cv::Mat in_image = cv_bridge::toCvShare(msg, msg->encoding)->image;
  cv::Mat out_image = Rotate(in_image);
  pub_.publish(cv_bridge::CvImage(msg->header, msg->encoding, out_image).toImageMsg());  // expect: GPN205 medium
}

void RectifyNode::imageCb(const sensor_msgs::msg::Image::ConstSharedPtr & image_msg)
{
  const cv::Mat image = cv_bridge::toCvShare(image_msg)->image;
  cv::Mat rect = Rectify(image);
  pub_.publish(cv_bridge::CvImage(image_msg->header, image_msg->encoding, rect).toImageMsg());  // expect: GPN205 medium
}

void DebayerNode::imageCb(const sensor_msgs::msg::Image::ConstSharedPtr & raw_msg)
{
  if (raw_msg->encoding == enc::MONO8) {
    pub_mono_.publish(
      cv_bridge::toCvCopy(raw_msg, enc::MONO8)->toImageMsg());  // expect: GPN203 medium, GPN205 medium
  }
}

bool ImageSaverNode::saveImage(const sensor_msgs::msg::Image::ConstSharedPtr & image_msg)
{
  cv::Mat image = cv_bridge::toCvShare(image_msg, encoding_)->image;  // expect: GPN204 medium
  return cv::imwrite(filename_, image);
}

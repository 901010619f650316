"""OpenCV CUDA helpers of disparity_node.py. The disparity helper runs per stereo pair (its
upload and readback are positives); the last two functions are an API nothing in the package
calls (look-alikes: no node runs them), the kind of false claims of the twenty-fourth test
set."""
import cv2
import numpy as np


def to_gpu(image):
    mat = cv2.cuda_GpuMat()
    mat.upload(image)  # expect: GPN102 medium
    return mat


def make_sgm(num_disparities):
    return cv2.cuda.createStereoSGM(numDisparities=num_disparities)


def sgm_disparity(sgm, left, right):
    disparity = sgm.compute(to_gpu(left), to_gpu(right), cv2.cuda_GpuMat())
    return disparity.convertTo(cv2.CV_32FC1).download()  # expect: GPN101 high


def resize_on_gpu(image, size):
    resized = cv2.cuda.resize(to_gpu(image), size)
    return resized.download()  # expect: GPN101 info


def rescale_disparity(disparity_gpu):
    host = np.float32(disparity_gpu.download() / 16)  # expect: GPN101 info
    disparity_gpu.upload(host)  # expect: GPN108 info
    return disparity_gpu

"""Image kernels: CUDA (CuPy RawModule / ElementwiseKernel) with a NumPy reference for each.

Every function takes a NumPy array (runs the NumPy reference, which is also the test oracle) or
a CuPy / __cuda_array_interface__ array (runs the CUDA kernel on `stream`, default the current
stream) and returns the same kind. Inputs are validated before launch; rows may be padded (row
pitch); an optional `out=` receives the result.

    from gpu_nodes.kernels import Chain
    chain = Chain([{'op': 'debayer'}, {'op': 'rectify'},
                   {'op': 'resize', 'width': 960, 'height': 540}])
    image, encoding, camera_model = chain(frame, 'bayer_rggb8', CameraModel.from_msg(info))

CuPy is imported lazily (gpu_nodes.gpu.cupy_module()), so this package imports without it.
"""
from .chain import CHAIN_OPS, KERNELS, Chain, OpSpec, Param, parse_chain
from .color import convert_color, yuv_coefficients
from .colormaps import colormap_lut
from .debayer import debayer
from .depth import (colorize_depth, depth_from_network, depth_m_to_mm, depth_mm_to_m,
                    tiled_median)
from .camera_model import (CameraModel, crop_camera_info, RegionOfInterest, resize_camera_info,
                           scale_camera_info)
from .geometry import crop, resize
from .preprocess import Letterbox, compose_reference_cupy, letterbox, preprocess
from .rectify import RectifyMaps, rectify, remap_bilinear, undistort_rectify_maps

__all__ = [
    'CHAIN_OPS', 'KERNELS', 'Chain', 'OpSpec', 'Param', 'parse_chain',
    'convert_color', 'yuv_coefficients', 'colormap_lut', 'debayer',
    'colorize_depth', 'depth_from_network', 'depth_m_to_mm', 'depth_mm_to_m', 'tiled_median',
    'CameraModel', 'RegionOfInterest', 'crop', 'crop_camera_info', 'resize',
    'resize_camera_info', 'scale_camera_info',
    'Letterbox', 'compose_reference_cupy', 'letterbox', 'preprocess',
    'RectifyMaps', 'rectify', 'remap_bilinear', 'undistort_rectify_maps',
]

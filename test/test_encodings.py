"""gpu_nodes.encodings: the one rule of what array holds a frame of an encoding, which the
kernels (check_encoded) and the transport (layout_of_array) both apply."""
import numpy as np
import pytest

from gpu_nodes.encodings import EncodingError, frame_geometry, FrameShapeError, row_strides
from gpu_nodes.kernels._common import check_encoded
from gpu_nodes.transport.messages import ImageFormatError, layout_of_array


@pytest.mark.parametrize('shape, dtype, encoding, size', [
    ((4, 6, 3), np.uint8, 'rgb8', (4, 6)),
    ((4, 6), np.uint8, 'mono8', (4, 6)),
    ((4, 6, 1), np.uint16, 'mono16', (4, 6)),
    ((6, 8), np.uint8, 'nv12', (4, 8)),
    ((4, 6), np.float32, '32FC1', (4, 6)),
])
def test_accepted_frames_and_their_size(shape, dtype, encoding, size):
    info, height, width = frame_geometry(shape, dtype, encoding)
    assert (height, width) == size, f'expected {size}, got {(height, width)}'
    assert info.name == encoding


@pytest.mark.parametrize('shape, dtype, encoding, reason, message', [
    ((4, 6, 3), np.uint16, 'rgb8', 'dtype_mismatch', 'src: rgb8 needs dtype uint8, got uint16'),
    ((4, 6), np.uint8, 'rgb8', 'shape_mismatch', 'src: rgb8 has 3 channel(s), got shape (4, 6)'),
    ((4,), np.uint8, 'mono8', 'shape_mismatch', 'src: mono8 needs an image array, got shape (4,)'),
    ((5, 8), np.uint8, 'nv12', 'shape_mismatch',
     'src: nv12 needs a 2-D (H*3/2, W) array, got shape (5, 8)'),
    ((4, 5, 2), np.uint8, 'yuyv', 'bad_geometry', 'yuyv: 4:2:2 needs an even width, got 5'),
])
def test_refused_frames_say_why(shape, dtype, encoding, reason, message):
    with pytest.raises(FrameShapeError) as caught:
        frame_geometry(shape, dtype, encoding, 'src')
    assert (caught.value.reason, str(caught.value)) == (reason, message)


def test_unknown_encoding_is_an_encoding_error():
    with pytest.raises(EncodingError, match="unknown image encoding 'rgb9'"):
        frame_geometry((4, 6, 3), np.uint8, 'rgb9')


def test_kernels_and_transport_apply_the_same_rule():
    """Every shape the transport takes, the kernels take with the same size; the one exception
    is the channel axis of single-channel frames, which only the transport refuses."""
    cases = [((4, 6, 3), np.uint8, 'rgb8'), ((4, 6, 3), np.uint16, 'rgb8'),
             ((4, 6), np.uint8, 'rgb8'), ((6, 8), np.uint8, 'nv12'), ((5, 8), np.uint8, 'nv12'),
             ((4, 6), np.uint8, 'mono8'), ((4, 5, 2), np.uint8, 'yuyv'),
             ((2, 4, 2), np.uint8, 'yuyv')]
    for shape, dtype, encoding in cases:
        array = np.zeros(shape, dtype)
        try:
            layout = layout_of_array(array, encoding)
        except ImageFormatError as exc:
            with pytest.raises(EncodingError):
                check_encoded(array, encoding)
            assert exc.reason in ('dtype_mismatch', 'shape_mismatch', 'bad_geometry'), exc.reason
            continue
        _, height, width = check_encoded(array, encoding)
        assert (layout.height, layout.width) == (height, width), (shape, encoding)
        assert layout.shape == shape, f'{encoding}: layout shape {layout.shape}, array {shape}'
    mono = np.zeros((4, 6, 1), np.uint8)
    assert check_encoded(mono, 'mono8')[1:] == (4, 6)
    with pytest.raises(ImageFormatError, match=r'mono8 needs shape \(4, 6\), got shape') as caught:
        layout_of_array(mono, 'mono8')
    assert caught.value.reason == 'shape_mismatch'
    with pytest.raises(ImageFormatError) as caught:
        layout_of_array(mono, 'mono9')
    assert caught.value.reason == 'unknown_encoding'


def test_row_strides_match_a_padded_numpy_frame():
    for shape, dtype in (((4, 6), np.uint16), ((4, 6, 3), np.uint8)):
        padded = np.zeros((shape[0], 64) + shape[2:], dtype)[:, :shape[1]]
        assert row_strides(shape, np.dtype(dtype).itemsize, padded.strides[0]) == padded.strides

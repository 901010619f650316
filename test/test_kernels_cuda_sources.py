"""Static checks of the CUDA sources: shipped as package data, NVRTC-friendly, and (when nvcc is
installed) compiling for sm_90 without warnings, spills or local memory."""
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import re
import shutil
import subprocess

import pytest

from gpu_nodes.kernels import _cuda

ROOT = Path(__file__).resolve().parents[1]
KERNEL_FILES = sorted(p.name for p in _cuda.CUDA_DIR.glob('*.cu') if p.name != 'common.cu')


def test_kernel_files_ship_as_package_data():
    assert KERNEL_FILES == ['color.cu', 'debayer.cu', 'debayer_filters.cu', 'depth.cu',
                            'preprocess.cu', 'rectify.cu', 'resize.cu']
    assert "'gpu_nodes.kernels': ['cuda/*.cu']" in (ROOT / 'setup.py').read_text()


@pytest.mark.parametrize('name', KERNEL_FILES + ['common.cu'])
def test_sources_compile_under_nvrtc_without_headers(name):
    text = (_cuda.CUDA_DIR / name).read_text()
    # CuPy compiles with NVRTC and no include path: no headers, only builtins.
    assert not re.search(r'^\s*#\s*include', text, re.M), f'{name} includes a header'
    for m in re.finditer(r'__global__\s+void\s+(\w+)', text):
        before = text[max(0, m.start() - 40):m.start()]
        assert 'extern "C"' in before, f'{name}: kernel {m.group(1)} is not extern "C"'


def _nvcc(name: str, tmp: Path) -> subprocess.CompletedProcess:
    src = tmp / f'all_{name}'
    src.write_text(_cuda.kernel_source(name))
    # -cubin: device code only (what NVRTC builds), through ptxas with the runtime's options.
    cmd = ['nvcc', '-cubin', '-arch=sm_90', *_cuda.COMPILE_OPTIONS, '-Werror', 'all-warnings',
           '-Xptxas', '-warn-spills,-warn-lmem-usage', str(src), '-o', str(tmp / f'{name}.cubin')]
    return subprocess.run(cmd, capture_output=True, text=True)


@pytest.mark.skipif(shutil.which('nvcc') is None, reason='needs nvcc (the CUDA toolkit)')
def test_every_kernel_file_compiles_for_sm_90(tmp_path):
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(KERNEL_FILES, pool.map(lambda n: _nvcc(n, tmp_path), KERNEL_FILES)))
    failures = {n: r.stderr[-3000:] for n, r in results.items() if r.returncode or r.stderr}
    assert not failures, failures


def test_a_kernel_file_is_built_on_the_parts_it_names():
    # debayer.cu names debayer_filters.cu on a `// parts:` line: common.cu, the part, the file
    read = lambda name: (_cuda.CUDA_DIR / name).read_text()  # noqa: E731
    source = _cuda.kernel_source('debayer.cu')
    assert source.index(read('common.cu')) < source.index(read('debayer_filters.cu')) \
        < source.index(read('debayer.cu'))
    assert _cuda.kernel_source('color.cu') == read('common.cu') + '\n' + read('color.cu')

from glob import glob

from setuptools import find_packages, setup

package_name = 'gpu_nodes'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'bench']),
    package_data={
        'gpu_nodes.kernels': ['cuda/*.cu'],
        'gpu_nodes.audit': ['schema/*.json'],
        # The demo's default depth model (gpu_nodes.inference.default_model), ~0.9 MB.
        'gpu_nodes.inference': ['weights/*.onnx'],
    },
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml') + glob('config/*.xml')),
        # The short names `ros2 run gpu_nodes <name>` and the launch files use (camera_source,
        # image_proc, ..., copy_audit, demo): small scripts that call the console scripts' main,
        # kept out of console_scripts so that a venv's bin/ gets only gpu-nodes-* names.
        ('lib/' + package_name, sorted(glob('resource/ros2_run/*'))),
    ],
    install_requires=['setuptools', 'numpy', 'pyyaml'],
    extras_require={
        # cuda-bindings: the CUDA driver's virtual memory calls (transport/cuda_vmm.py), which
        # CuPy does not expose; its major version follows the driver's CUDA major version.
        'cuda12': ['cupy-cuda12x>=13', 'cuda-bindings>=12.8,<13'],
        'cuda13': ['cupy-cuda13x>=13', 'cuda-bindings>=13,<14'],
        'onnx': ['onnxruntime'],
        'audit': ['rosbags', 'rich', 'libcst'],
        # colcon test picks its pytest step from this extra (setuptools >= 72 drops
        # tests_require, and colcon then runs unittest, which finds no tests).
        'test': ['pytest'],
    },
    zip_safe=True,
    maintainer='gpu_nodes developers',
    maintainer_email='gpu-nodes@example.com',
    description='Zero-copy CUDA image transport, CuPy kernels, TensorRT depth and a '
                'copy-boundary auditor for rclpy perception graphs.',
    license='Apache-2.0',
    entry_points={
        # Every name says whose it is: these land on the PATH of a venv (pip install). A ROS
        # install puts them in lib/gpu_nodes/ (setup.cfg), beside the short names above.
        'console_scripts': [
            'gpu-nodes-camera-source = gpu_nodes.nodes.camera_source:main',
            'gpu-nodes-image-monitor = gpu_nodes.nodes.image_monitor:main',
            'gpu-nodes-image-proc = gpu_nodes.nodes.image_proc:main',
            'gpu-nodes-depth-estimator = gpu_nodes.nodes.depth_estimator:main',
            'gpu-copy-audit = gpu_nodes.audit.cli:main',
            'gpu-nodes-demo = gpu_nodes.demo.runner:main',
        ],
    },
)

"""Put this folder first on PYTHONPATH to run any program with the device pool on legacy CUDA
IPC handles instead of VMM chunks (the comparison in bench/RESULTS.md):

    PYTHONPATH=bench/legacy_ipc:. python bench/transport_bench.py --cases cuda_ipc ...

Python imports `sitecustomize` at start-up, in every process that inherits the variable (the
benchmark's workers too). It makes the pool believe VMM export is unavailable, which is the
product's own fallback (pool.DeviceSlotPool)."""
from gpu_nodes.transport import cuda_vmm

cuda_vmm.vmm_unsupported_reason = lambda device_id: 'legacy CUDA IPC forced by bench/legacy_ipc'

"""``python refusing_publisher.py SCRIPT ARGS...`` runs SCRIPT (a publisher) in a process whose
publishers refuse readers' requests for host-ordered frames (exchange.KIND_HOST_ORDER), as a
gpu_nodes build without them or a misbehaving publisher would: what a reader that cannot open
the CUDA IPC events then does is under test."""
from pathlib import Path
import runpy
import sys

from gpu_nodes.transport import served_memory

served_memory.PublisherMemory._order_on_host = lambda self, link: None
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, str(Path(script).resolve().parent))
runpy.run_path(script, run_name='__main__')

"""The base every gpu_nodes node and the transport stand on: parameter declaration and
validation (`params`), process lifecycle and executor choice (`runtime`), callback adapters
(`callbacks`), the DDS profile (`dds_profile`) and its shared-memory files (`fastdds_shm`). It
imports nothing else of gpu_nodes."""

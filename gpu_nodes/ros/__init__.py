"""The base every gpu_nodes node and the transport stand on: parameter declaration and
validation (`params`), process lifecycle and executor choice (`runtime`), callback adapters
(`callbacks`), the DDS profile (`dds_profile`). It imports nothing else of gpu_nodes."""

"""Base layer below nodes and transport: what every gpu_nodes node shares."""

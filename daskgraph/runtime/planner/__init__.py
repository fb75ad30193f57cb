"""The planner: a device for every op (placement) and one program per device (lowering); pure
functions of the graph and the cluster's devices."""

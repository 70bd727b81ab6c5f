"""InfiniBand QoS: service levels, VL arbitration, the flow engine's approximation of it, data staging."""

"""Emulated testbeds: a scenario on namespaces and Open vSwitch, driven by the openflow driver."""

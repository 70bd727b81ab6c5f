"""UnisonFlow: routing per MPI primitive, synchronized with the application.

MPI context travels in the destination MAC (:mod:`.tags`); an interconnect
controller (:mod:`.controller`) answers packet-ins by dispatching the decoded
context to one pluggable module per primitive (:mod:`.modules`), and the simulator
(:mod:`.dataplane`, :mod:`.run`) models the first-packet delay, flow-table
capacity and idle timeouts. See docs/unisonflow.md.
"""

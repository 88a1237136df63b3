"""The layout planner: candidate pool layouts for a set of disks and what each should give.

Pure arithmetic, no I/O: `space` (usable capacity as OpenZFS computes it), `candidates`
(the layouts a number of disks allows), `predict` (bandwidth, IOPS, fault tolerance) and
`inputs` (the disks, parsed from what a user types). docs/planner.md has the method and
how far off it is in the lab.
"""

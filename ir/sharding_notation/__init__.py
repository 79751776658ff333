"""HLO's sharding notation (`{devices=[2,1]<=[2]}`...): parsing, and mapping to tile layouts.

It belongs to the IR: the HLO frontend reads it from programs, the runtime reads it from the
command line (`--output-sharding`) and manifests.
"""

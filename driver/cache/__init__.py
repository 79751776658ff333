"""The compile cache, kept as the Neuron tools keep theirs.

`layout` (where things live, reading a published entry's NEFF), `digest` (content hashes),
`key` (a compile's key), `store` (lookup, locking, publishing, cleaning). The package itself
imports nothing, so a replayed hit (`cli.replay`) loads only `layout` and `digest`.
"""

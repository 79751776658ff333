"""Reading the files a user hands nxcc, with every size bounded before anything is allocated.

One reader per kind of file, used by every command that takes one:

- `regular`: regular files only (a device such as `/dev/zero`, a FIFO or a folder is
  refused before it is read), read up to a stated number of bytes;
- `npy`, `npz`: `.npy` arrays and `.npz` archives of them (`run --inputs`, `--load-state`,
  training data, checkpoint shards): each header read and checked (a numeric dtype, never
  Python objects; a shape within the limits and equal to the bytes present) before the
  array is allocated; zip members through a bounded reader (stored or deflated only, no
  encryption, no duplicate names, no overlapping members, nothing after the declared data);
  big-endian arrays converted to the machine's byte order;
- `structured`: JSON and YAML documents with their size and nesting bounded.

Every refusal is a `UserFileError`: one line naming the file (and the member) and what is
wrong. Callers turn it into their own error class and code.
"""

from __future__ import annotations

from nxcc.backend.userfiles.regular import UserFileError, open_regular, read_regular

__all__ = ["UserFileError", "open_regular", "read_regular"]

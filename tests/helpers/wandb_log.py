"""Read the records of a W&B ``.wandb`` transaction log (what offline mode writes), so a test
can check what would be uploaded without a W&B server.

Format (wandb's LevelDB-style log): a 7-byte header (``:W&B``, magic 0xBEE1, version 0), then
32 KiB blocks of chunks, each ``crc32c (4) | length (2, LE) | type (1) | data``; type 1 is a
whole record, 2/3/4 the first/middle/last piece of one. Each record is a ``Record`` protobuf.
"""

from __future__ import annotations

import struct
from pathlib import Path

BLOCK = 32 * 1024
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: str | Path) -> list:
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", f"{path}: not a W&B log"
    out, pending, pos = [], b"", HEADER
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # block trailer padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 0 and length == 0:
            break
        if kind == FULL:
            pending = chunk
        elif kind == FIRST:
            pending = chunk
            continue
        elif kind == MIDDLE:
            pending += chunk
            continue
        elif kind == LAST:
            pending += chunk
        rec = pb.Record()
        rec.ParseFromString(pending)
        out.append(rec)
        pending = b""
    return out

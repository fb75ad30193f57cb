"""Reading event files back: TensorFlow 1's ``tf.train.summary_iterator``.

An event file (what :class:`~daskgraph.summary.writer.FileWriter` writes, or TensorFlow's
writers) is a sequence of TFRecords: a little-endian 64-bit length, its masked CRC-32C, the
bytes of one ``Event`` protocol buffer and their masked CRC-32C. :func:`summary_iterator`
yields the events as tensorboardX's ``Event`` messages (the same fields as TensorFlow's); a
record cut short or whose checksum does not match raises
:class:`~daskgraph.errors.DataLossError` in TensorFlow's words, a missing file
:class:`~daskgraph.errors.NotFoundError`.

>>> import glob, tempfile
>>> from daskgraph.summary.writer import FileWriter
>>> from tensorboardX.proto.summary_pb2 import Summary
>>> logdir = tempfile.mkdtemp()
>>> with FileWriter(logdir) as writer:
...     writer.add_summary(Summary(value=[Summary.Value(tag="loss", simple_value=0.5)]), 7)
>>> events = list(summary_iterator(glob.glob(logdir + "/events*")[0]))
>>> [e.WhichOneof("what") for e in events], events[1].step, events[1].summary.value[0].tag
(['file_version', 'summary'], 7, 'loss')
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from daskgraph.errors import DataLossError, NotFoundError

__all__ = ["summary_iterator", "tf_record_iterator"]

_HEADER = 12  # the length (8 bytes) and its checksum (4)
_FOOTER = 4  # the data's checksum


def tf_record_iterator(path: str) -> Iterator[bytes]:
    """The records of the TFRecord file ``path`` (no compression), checksums verified."""
    from tensorboardX.record_writer import masked_crc32c

    try:
        f = open(path, "rb")  # closed by the with block below
    except FileNotFoundError:
        raise NotFoundError(f"{path}; No such file or directory", op=None, path=path) from None
    with f:
        offset = 0
        while True:
            header = f.read(_HEADER)
            if not header:
                return
            if len(header) < _HEADER:
                raise _truncated(offset)
            (length,) = struct.unpack("<Q", header[:8])
            if struct.unpack("<I", header[8:])[0] != masked_crc32c(header[:8]):
                raise DataLossError(f"corrupted record at {offset}", op=None)
            data = f.read(length)
            footer = f.read(_FOOTER)
            if len(data) < length or len(footer) < _FOOTER:
                raise _truncated(offset)
            if struct.unpack("<I", footer)[0] != masked_crc32c(data):
                raise DataLossError(f"corrupted record at {offset}", op=None)
            yield data
            offset += _HEADER + length + _FOOTER


def _truncated(offset: int) -> DataLossError:
    return DataLossError(
        f"truncated record at {offset}' failed with Read less bytes than requested", op=None
    )


def summary_iterator(path: str) -> Iterator[Any]:
    """The ``Event`` protocol buffers of the event file ``path``, in order.

    Parameters
    ----------
    path
        An event file (``logdir/events.out.tfevents.*``).
    """
    from tensorboardX.proto.event_pb2 import Event

    for record in tf_record_iterator(path):
        yield Event.FromString(record)

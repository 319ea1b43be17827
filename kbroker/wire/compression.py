"""Record-batch compression codecs: gzip, snappy, lz4, zstd (attribute bits 0-2 of a v2 batch).

Only the records area of a batch (everything after the 61-byte header) is compressed; see
:mod:`kbroker.wire.records`. Formats, as Kafka and its clients use them:

* **gzip** (1): RFC 1952 members; Java's ``GZIPInputStream`` accepts several concatenated
  members, so the decoder does too.
* **snappy** (2): either one raw snappy block (librdkafka, Go and Python clients) or the
  xerial "snappy-java" stream the Java client writes: an 8-byte magic ``\\x82SNAPPY\\x00``, two
  big-endian int32s (version, minimum compatible version), then chunks each prefixed by a
  big-endian int32 length holding one raw snappy block. The decoder recognises the magic.
* **lz4** (3): the LZ4 frame format. Kafka's Java reader only accepts independent blocks, so the
  encoder writes independent 64 KiB blocks without content size or checksums, like Kafka's own
  ``Lz4BlockOutputStream``.
* **zstd** (4): zstandard frames (KIP-110); frames may omit their content size, so the decoder
  streams and stops at the cap.

Rules kept: every decoder is bounded by ``max_size`` (a decompression bomb is a
:class:`CorruptRecord`, not an allocation), and anything a codec library raises on bad input
becomes :class:`CorruptRecord`. No I/O, no clocks. The codec libraries are imported on
first use: a broker whose clients send uncompressed batches (or whose batches are stored as
sent, the usual case) never loads them, and start-up does not pay for them.
"""

from __future__ import annotations

import io
import struct
import zlib

from .errors import CorruptRecord
from .varint import BadVarint, read_uvarint

__all__ = [
    "CODEC_NAMES",
    "COMPRESSION_GZIP",
    "COMPRESSION_LZ4",
    "COMPRESSION_NONE",
    "COMPRESSION_SNAPPY",
    "COMPRESSION_ZSTD",
    "DEFAULT_MAX_DECOMPRESSED",
    "XERIAL_MAGIC",
    "compress",
    "decompress",
]

COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4

# Kafka's `compression.type` names, by attribute value.
CODEC_NAMES = {
    COMPRESSION_NONE: "none",
    COMPRESSION_GZIP: "gzip",
    COMPRESSION_SNAPPY: "snappy",
    COMPRESSION_LZ4: "lz4",
    COMPRESSION_ZSTD: "zstd",
}

DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_INT32 = struct.Struct(">i")

# Read granularity of the streaming decoders: small enough that overshooting the cap by one
# chunk costs little, large enough to keep the Python loop short.
_CHUNK = 256 * 1024


def _snappy():
    import snappy
    return snappy


def _lz4():
    import lz4.frame
    return lz4.frame


def _zstd():
    import zstandard
    return zstandard


# Defaults follow Kafka's (KIP-390): gzip 6 (java.util.zip default), lz4 fast mode, zstd 3.
_GZIP_DEFAULT_LEVEL = 6
_ZSTD_DEFAULT_LEVEL = 3


def compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """Compress ``data`` (the uncompressed records area) with ``codec``."""
    if codec == COMPRESSION_NONE:
        return bytes(data)
    if codec == COMPRESSION_GZIP:
        c = zlib.compressobj(_GZIP_DEFAULT_LEVEL if level is None else level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if codec == COMPRESSION_SNAPPY:
        return _snappy().compress(bytes(data))
    if codec == COMPRESSION_LZ4:
        lz4 = _lz4()
        return lz4.compress(
            data,
            compression_level=0 if level is None else level,
            block_size=lz4.BLOCKSIZE_MAX64KB,
            block_linked=False,  # Kafka's Java reader rejects dependent blocks
            content_checksum=False,
            store_size=False,
        )
    if codec == COMPRESSION_ZSTD:
        return _zstd().ZstdCompressor(level=_ZSTD_DEFAULT_LEVEL if level is None else level).compress(data)
    raise CorruptRecord(f"unknown compression codec {codec}")


def decompress(codec: int, data, *, max_size: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Decompress ``data`` (bytes-like) with ``codec``; at most ``max_size`` bytes come out.

    Raises :class:`CorruptRecord` for an unknown codec, undecodable input, or output that would
    exceed ``max_size``.
    """
    if codec == COMPRESSION_NONE:
        if len(data) > max_size:
            raise CorruptRecord(f"records area exceeds {max_size} bytes")
        return bytes(data)
    try:
        if codec == COMPRESSION_GZIP:
            return _gunzip(data, max_size)
        if codec == COMPRESSION_SNAPPY:
            return _unsnappy(data, max_size)
        if codec == COMPRESSION_LZ4:
            return _unlz4(data, max_size)
        if codec == COMPRESSION_ZSTD:
            return _unzstd(data, max_size)
    except CorruptRecord:
        raise
    except (zlib.error, RuntimeError, ValueError, EOFError, OSError) as exc:
        # lz4.frame raises RuntimeError on bad frames; snappy/zstd raise their own or ValueError.
        raise CorruptRecord(f"{CODEC_NAMES[codec]} data is corrupt: {exc}") from None
    except Exception as exc:
        if not isinstance(exc, _library_errors(codec)):
            raise
        raise CorruptRecord(f"{CODEC_NAMES[codec]} data is corrupt: {exc}") from None
    raise CorruptRecord(f"unknown compression codec {codec}")


def _library_errors(codec: int) -> tuple[type, ...]:
    """The codec library's own exception types for bad input (its module is loaded by now)."""
    if codec == COMPRESSION_SNAPPY:
        return (_snappy().UncompressError,)
    if codec == COMPRESSION_ZSTD:
        return (_zstd().ZstdError,)
    return ()


def _too_big(codec: str, max_size: int) -> CorruptRecord:
    return CorruptRecord(f"{codec} data decompresses to more than {max_size} bytes")


_GZIP_MAGIC = b"\x1f\x8b"


def _gunzip(data, max_size: int) -> bytes:
    rest = bytes(data)
    if not rest:
        raise CorruptRecord("gzip data is empty")
    out = bytearray()
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        chunk = rest
        while True:
            # Ask for at most one byte past the cap: getting it proves the bomb.
            piece = d.decompress(chunk, max_size + 1 - len(out))
            out += piece
            if len(out) > max_size:
                raise _too_big("gzip", max_size)
            if d.eof:
                break
            chunk = d.unconsumed_tail
            if not piece and not chunk:
                raise CorruptRecord("gzip data is truncated")
        rest = d.unused_data
        # Like java.util.zip.GZIPInputStream: further members are read, trailing bytes that
        # do not start another member are ignored.
        if not rest.startswith(_GZIP_MAGIC):
            return bytes(out)


def _raw_snappy_length(block, where: str) -> int:
    try:
        n, _ = read_uvarint(block, 0)
    except BadVarint:
        raise CorruptRecord(f"snappy {where} has a bad length preamble") from None
    return n


def _unsnappy(data, max_size: int) -> bytes:
    raw = bytes(data)
    if raw[:8] != XERIAL_MAGIC:
        if _raw_snappy_length(raw, "block") > max_size:
            raise _too_big("snappy", max_size)
        return _snappy().uncompress(raw)
    # xerial / snappy-java stream
    if len(raw) < _XERIAL_HEADER.size:
        raise CorruptRecord("xerial snappy header is truncated")
    pos = _XERIAL_HEADER.size
    out = bytearray()
    end = len(raw)
    while pos < end:
        if end - pos < 4:
            raise CorruptRecord("xerial snappy chunk length is truncated")
        (n,) = _INT32.unpack_from(raw, pos)
        pos += 4
        if n < 0 or n > end - pos:
            raise CorruptRecord(f"xerial snappy chunk of {n} bytes runs past the data")
        block = raw[pos : pos + n]
        pos += n
        if _raw_snappy_length(block, "chunk") > max_size - len(out):
            raise _too_big("snappy", max_size)
        out += _snappy().uncompress(block)
    return bytes(out)


_LZ4_MAGIC = b"\x04\x22\x4d\x18"


def _unlz4(data, max_size: int) -> bytes:
    rest = bytes(data)
    if not rest:
        raise CorruptRecord("lz4 data is empty")
    out = bytearray()
    while True:
        d = _lz4().LZ4FrameDecompressor()
        chunk = rest
        while True:
            piece = d.decompress(chunk, max_length=min(_CHUNK, max_size + 1 - len(out)))
            out += piece
            if len(out) > max_size:
                raise _too_big("lz4", max_size)
            if d.eof:
                break
            if d.needs_input or (not piece and not chunk):
                raise CorruptRecord("lz4 frame is truncated")
            chunk = b""  # drain output the decompressor still holds
        rest = d.unused_data or b""
        # Kafka's reader stops after one frame; accept further frames, ignore other trailers.
        if not rest.startswith(_LZ4_MAGIC):
            return bytes(out)


_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE_MASK = 0xFFFFFFF0
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50
_UINT32_LE = struct.Struct("<I")
_DID_SIZES = (0, 1, 2, 4)
_FCS_SIZES = (0, 2, 4, 8)


def _check_zstd_frames(raw: bytes) -> None:
    """Walk the frame and block headers (RFC 8878 §3.1) without decompressing.

    The streaming decoder silently stops at the end of a truncated frame; this walk is what
    turns truncation, reserved block types and trailing garbage into :class:`CorruptRecord`.
    """
    pos = 0
    end = len(raw)
    while pos < end:
        if end - pos < 4:
            raise CorruptRecord("zstd frame magic is truncated")
        (magic,) = _UINT32_LE.unpack_from(raw, pos)
        pos += 4
        if magic & _ZSTD_SKIPPABLE_MASK == _ZSTD_SKIPPABLE_MAGIC:
            if end - pos < 4:
                raise CorruptRecord("zstd skippable frame is truncated")
            (n,) = _UINT32_LE.unpack_from(raw, pos)
            pos += 4 + n
            if pos > end:
                raise CorruptRecord("zstd skippable frame is truncated")
            continue
        if magic != _ZSTD_MAGIC:
            raise CorruptRecord("zstd data has a bad frame magic")
        if pos >= end:
            raise CorruptRecord("zstd frame header is truncated")
        fhd = raw[pos]
        pos += 1
        if fhd & 0x08:
            raise CorruptRecord("zstd frame header has the reserved bit set")
        single_segment = (fhd >> 5) & 1
        fcs_size = _FCS_SIZES[fhd >> 6]
        if fcs_size == 0 and single_segment:
            fcs_size = 1
        pos += (0 if single_segment else 1) + _DID_SIZES[fhd & 3] + fcs_size
        checksum = 4 if fhd & 0x04 else 0
        while True:
            if end - pos < 3:
                raise CorruptRecord("zstd block header is truncated")
            bh = raw[pos] | (raw[pos + 1] << 8) | (raw[pos + 2] << 16)
            pos += 3
            block_type = (bh >> 1) & 3
            if block_type == 3:
                raise CorruptRecord("zstd block has the reserved type")
            pos += 1 if block_type == 1 else bh >> 3
            if pos > end:
                raise CorruptRecord("zstd block is truncated")
            if bh & 1:
                break
        pos += checksum
        if pos > end:
            raise CorruptRecord("zstd frame checksum is truncated")


def _unzstd(data, max_size: int) -> bytes:
    raw = bytes(data)
    if not raw:
        raise CorruptRecord("zstd data is empty")
    _check_zstd_frames(raw)
    out = bytearray()
    with _zstd().ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True) as reader:
        while True:
            piece = reader.read(min(_CHUNK, max_size + 1 - len(out)))
            if not piece:
                return bytes(out)
            out += piece
            if len(out) > max_size:
                raise _too_big("zstd", max_size)

"""The header fields of a gRPC answer's header blocks, each sequence of blocks decoded once.

HPACK decoding is a function of a connection's blocks in order alone (each connection starts
with an empty dynamic table, and the client never changes its size), and a server answers
every health check of a monitor alike, so a sequence of blocks seen before is not decoded
again: ``hpack`` (pure Python, Huffman coding included) was about a tenth of a gRPC probe's CPU
(``benchmarks/RESULTS-protocols.md``). The cache is bounded by :data:`DECODED_MAX`, the oldest
entry going first; what a server varies between answers (a date, a message) only misses.
"""

from __future__ import annotations

import hpack

from route_monitor.probe.reasons import ProtocolError

Fields = tuple[tuple[bytes, bytes], ...]
_DECODED: dict[tuple[bytes, ...], Fields] = {}
"""The fields of the last block of a sequence, by the sequence."""
DECODED_MAX = 512


class HeaderBlocks:
    """One connection's header blocks, in the order they came."""

    __slots__ = ("_blocks", "_decoder")

    def __init__(self) -> None:
        self._blocks: tuple[bytes, ...] = ()
        self._decoder: hpack.Decoder | None = None
        """Made on the first block not decoded before; it then decodes the rest of the connection's."""

    def fields(self, block: bytes) -> Fields:
        """The fields of the connection's next complete header block; :class:`ProtocolError` if it is not HPACK."""
        blocks = self._blocks = (*self._blocks, block)
        fields = _DECODED.get(blocks)
        if fields is not None:
            return fields
        decoder = self._decoder
        if decoder is None:
            decoder = self._decoder = hpack.Decoder()
            for earlier in blocks[:-1]:  # decoded before: rebuild the dynamic table they left
                decoder.decode(earlier, raw=True)
        try:
            fields = tuple((bytes(k), bytes(v)) for k, v in decoder.decode(block, raw=True))
        except hpack.HPACKError as e:
            raise ProtocolError(f"not an HTTP/2 answer: {str(e)[:200] or type(e).__name__}") from None
        if len(_DECODED) >= DECODED_MAX:
            del _DECODED[next(iter(_DECODED))]
        _DECODED[blocks] = fields
        return fields

"""The demo's targets that are not HTTP: a gRPC server answering the standard health check
(``grpc.health.v1.Health/Check``: ``SERVING``) over h2c, and a Redis-like TCP server answering
``PING`` with ``+PONG``. Small servers on loopback, enough to show the gRPC and TCP probes;
neither is a general-purpose implementation.
"""

from __future__ import annotations

import asyncio

import h2.config
import h2.connection
import h2.events

SERVING = b"\x00\x00\x00\x00\x02\x08\x01"
"""A length-prefixed ``HealthCheckResponse{status: SERVING}``."""
_CONFIG = h2.config.H2Configuration(client_side=False, header_encoding=None)


async def _grpc_health(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    conn = h2.connection.H2Connection(config=_CONFIG)
    conn.initiate_connection()
    writer.write(conn.data_to_send())
    try:
        while data := await reader.read(65536):
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.DataReceived) and event.stream_id:
                    conn.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id:
                    sid = event.stream_id
                    conn.send_headers(sid, [(b":status", b"200"), (b"content-type", b"application/grpc")])
                    conn.send_data(sid, SERVING)
                    conn.send_headers(sid, [(b"grpc-status", b"0")], end_stream=True)
            writer.write(conn.data_to_send())
            await writer.drain()
    except (ConnectionError, h2.exceptions.ProtocolError):
        pass
    finally:
        writer.close()


async def _redis_like(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while line := await reader.readline():
            if line.strip().upper() == b"PING":
                writer.write(b"+PONG\r\n")
                await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def start_grpc_health() -> asyncio.Server:
    return await asyncio.start_server(_grpc_health, "127.0.0.1", 0)


async def start_redis_like() -> asyncio.Server:
    return await asyncio.start_server(_redis_like, "127.0.0.1", 0)

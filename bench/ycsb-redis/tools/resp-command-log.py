#!/usr/bin/env python3
"""Logging TCP proxy for Redis-protocol servers: counts the commands clients send.

    resp-command-log.py LISTEN_PORT TARGET_PORT LOG_FILE [TARGET_HOST]

Listens on 127.0.0.1:LISTEN_PORT, forwards every connection to
TARGET_HOST:TARGET_PORT (default 127.0.0.1), and after each connection closes
rewrites LOG_FILE with the count of every command name seen so far (CLIENT,
CONFIG and COMMAND with their subcommand), plus '<connections>'. Stop it with
kill PID.

Why not `redis-cli monitor`: MONITOR shows only commands the server knows. A
Redis older than 7.2 rejects CLIENT SETINFO before MONITOR sees it, so MONITOR
cannot show that a client sends commands the locked-in server lacks; this
proxy sees the bytes on the wire.
"""
import asyncio
import collections
import sys

counts = collections.Counter()


def parse(buf):
    """Yields (command name, end offset) for each complete command in buf."""
    pos = 0
    while pos < len(buf):
        end = buf.find(b"\r\n", pos)
        if end < 0:
            return
        if buf[pos:pos + 1] != b"*":  # inline command
            words = buf[pos:end].split()
            pos = end + 2
            if words:
                yield words[0].upper(), pos
            continue
        n = int(buf[pos + 1:end])
        p = end + 2
        args = []
        for _ in range(n):
            e = buf.find(b"\r\n", p)
            if e < 0:
                return
            ln = int(buf[p + 1:e])
            s = e + 2
            if s + ln + 2 > len(buf):
                return
            args.append(buf[s:s + ln])
            p = s + ln + 2
        name = args[0].upper() if args else b"<empty>"
        if name in (b"CLIENT", b"CONFIG", b"COMMAND") and len(args) > 1:
            name += b" " + args[1].upper()
        pos = p
        yield name, pos


async def pipe(reader, writer, log):
    buf = b""
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
            if log:
                buf += data
                used = 0
                for name, used in parse(buf):
                    counts[name.decode(errors="replace")] += 1
                buf = buf[used:]
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main():
    listen, target, logpath = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    host = sys.argv[4] if len(sys.argv) > 4 else "127.0.0.1"

    async def handle(client_r, client_w):
        server_r, server_w = await asyncio.open_connection(host, target)
        counts["<connections>"] += 1
        await asyncio.gather(pipe(client_r, server_w, True), pipe(server_r, client_w, False))
        with open(logpath, "w") as f:
            for name, n in sorted(counts.items()):
                f.write(f"{n:8d} {name}\n")

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    asyncio.run(main())

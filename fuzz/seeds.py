#!/usr/bin/env python3
"""Writes the hand-written seed inputs of the fuzz targets into fuzz/seeds/<target>/.

Each seed is a well-formed input of its target's format (see the target's module docs in
fuzz_targets/), so that a run starts from the paths real inputs take rather than from checksum
and magic-number gates. `cargo xtask fuzz` merges them with what a run found and minimises the
result into fuzz/corpus/<target>/ (docs/fuzzing.md). Run from anywhere: python3 fuzz/seeds.py
"""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def kv_resp():
    # Choices: arena 64 * 64 bytes, 64 slots, 512-byte input, 1024-byte output, then steps.
    big = bytes([63, 63, 255, 255, 80, 7, 200, 3, 40, 255, 1, 90, 0, 0, 0, 0])
    small = bytes([2, 4, 0, 0, 3, 1, 0, 2, 5, 1, 0, 3, 0, 0, 0, 0])
    sessions = {
        "strings": resp(b"SET", b"k", b"v") + b"GET k\r\n" + resp(b"APPEND", b"k", b"w")
        + resp(b"INCR", b"n") + resp(b"INCRBY", b"n", b"-5") + resp(b"GETRANGE", b"k", b"0", b"-1")
        + resp(b"SETRANGE", b"k", b"3", b"xyz") + resp(b"MSET", b"a", b"1", b"b", b"2")
        + resp(b"MGET", b"a", b"b", b"c") + resp(b"STRLEN", b"k") + resp(b"GETDEL", b"a"),
        "expiry": resp(b"SET", b"k", b"v", b"PX", b"100") + resp(b"PTTL", b"k")
        + resp(b"EXPIRE", b"k", b"1") + resp(b"TTL", b"k") + resp(b"PERSIST", b"k")
        + resp(b"GETEX", b"k", b"EX", b"5") + resp(b"SET", b"k", b"w", b"KEEPTTL", b"GET"),
        "hash": resp(b"HSET", b"h", b"f", b"1", b"g", b"2") + resp(b"HGET", b"h", b"f")
        + resp(b"HGETALL", b"h") + resp(b"HDEL", b"h", b"f") + resp(b"HLEN", b"h")
        + resp(b"HMGET", b"h", b"f", b"g"),
        "list": resp(b"RPUSH", b"l", b"a", b"b", b"c") + resp(b"LPUSH", b"l", b"z")
        + resp(b"LRANGE", b"l", b"0", b"-1") + resp(b"LPOP", b"l", b"2") + resp(b"LSET", b"l", b"0", b"q")
        + resp(b"LREM", b"l", b"0", b"q") + resp(b"LTRIM", b"l", b"0", b"0") + resp(b"LINDEX", b"l", b"0"),
        "set": resp(b"SADD", b"s", b"a", b"b", b"c") + resp(b"SMEMBERS", b"s")
        + resp(b"SISMEMBER", b"s", b"a") + resp(b"SPOP", b"s", b"2") + resp(b"SRANDMEMBER", b"s", b"-3")
        + resp(b"SCARD", b"s"),
        "zset": resp(b"ZADD", b"z", b"1", b"a", b"2.5", b"b", b"-inf", b"c")
        + resp(b"ZRANGE", b"z", b"0", b"-1", b"WITHSCORES")
        + resp(b"ZRANGE", b"z", b"(1", b"+inf", b"BYSCORE", b"LIMIT", b"0", b"1")
        + resp(b"ZRANGE", b"z", b"[a", b"+", b"BYLEX") + resp(b"ZINCRBY", b"z", b"3", b"a")
        + resp(b"ZPOPMIN", b"z") + resp(b"ZRANK", b"z", b"b") + resp(b"ZSCORE", b"z", b"b"),
        "stream": resp(b"XADD", b"x", b"*", b"f", b"v") + resp(b"XADD", b"x", b"5-1", b"f", b"w")
        + resp(b"XLEN", b"x") + resp(b"XRANGE", b"x", b"-", b"+", b"COUNT", b"1")
        + resp(b"XREVRANGE", b"x", b"+", b"(0-1"),
        "keys": resp(b"SET", b"k", b"v") + resp(b"RENAME", b"k", b"j") + resp(b"TYPE", b"j")
        + resp(b"KEYS", b"*") + resp(b"EXISTS", b"j", b"k") + resp(b"RANDOMKEY") + resp(b"DEL", b"j")
        + resp(b"SELECT", b"3") + resp(b"DBSIZE") + resp(b"FLUSHDB") + resp(b"FLUSHALL"),
        "admin": b"PING\r\n" + resp(b"ECHO", b"hi") + resp(b"INFO") + resp(b"CONFIG", b"GET", b"*")
        + resp(b"CONFIG", b"SET", b"maxmemory", b"100") + resp(b"COMMAND", b"DOCS")
        + resp(b"FUNCTION", b"FLUSH") + resp(b"QUIT"),
        "errors": b"*2\r\n$3\r\nGET\r\n$-5\r\n",
        "oom": b"".join(resp(b"SET", b"k%d" % i, b"v" * 40) for i in range(12)),
    }
    for name, cmds in sessions.items():
        write("kv_resp", name, big + cmds)
    write("kv_resp", "small-buffers", small + sessions["strings"] + sessions["list"])


def abi_syscall():
    # One byte per register: every call number with a slot and small arguments.
    for nr in range(32):
        write("abi_syscall", "nr%02d" % nr, bytes([nr, 1, 0, 0, 0, 0]))
        write("abi_syscall", "nr%02d-args" % nr, bytes([nr, 2, 1, 3, 1, 0]))


def tag(kind, body):
    t = struct.pack("<II", kind, 8 + len(body)) + body
    return t + b"\0" * (-len(t) % 8)


def multiboot2():
    mmap = struct.pack("<II", 24, 0) + b"".join(
        struct.pack("<QQII", base, size, kind, 0)
        for base, size, kind in [(0, 0x9F000, 1), (0x100000, 0x7F00000, 1), (0xFEC00000, 0x1000, 2), (0, 0, 0)]
    )
    rsdp = b"RSD PTR " + bytes(12)
    tags = tag(1, b"lock=ticket cpus=2\0") + tag(2, b"GRUB 2.12\0") + tag(6, mmap) + tag(14, rsdp) + tag(15, rsdp + bytes(16))
    tags += tag(0, b"")
    write("multiboot2", "grub", struct.pack("<II", 8 + len(tags), 0) + tags)
    tags = tag(1, b"\0") + tag(0, b"")
    write("multiboot2", "minimal", struct.pack("<II", 8 + len(tags), 0) + tags)


def sdt_body(sig, body):
    # The acpi target sets the length field and the checksum.
    return sig + bytes(4) + b"\x01\x00" + b"FUZZOEFUZZTABL" + bytes(12) + body


def acpi():
    madt = struct.pack("<II", 0xFEE00000, 1)
    for uid, apic, flags in [(0, 0, 1), (1, 2, 1), (2, 4, 0), (3, 6, 3)]:
        madt += bytes([0, 8, uid, apic]) + struct.pack("<I", flags)
    madt += bytes([1, 12, 0, 0]) + struct.pack("<II", 0xFEC00000, 0)  # I/O APIC
    madt += bytes([2, 10, 0, 0]) + struct.pack("<IH", 2, 0)  # override: IRQ0 -> GSI2
    madt += bytes([2, 10, 0, 9]) + struct.pack("<IH", 9, 0xF)  # IRQ9, level, active low
    madt += bytes([5, 12, 0, 0]) + struct.pack("<Q", 0xFEE00000)  # local APIC address override
    madt += bytes([9, 16, 0, 0]) + struct.pack("<III", 300, 1, 9)  # x2APIC
    fadt = bytearray(244 - 36)
    fadt[76 - 36:80 - 36] = struct.pack("<I", 0x608)
    fadt[91 - 36] = 4
    fadt[112 - 36:116 - 36] = struct.pack("<I", 1 << 8)
    hpet = bytes(4) + bytes([0, 0, 0, 0]) + struct.pack("<Q", 0xFED00000) + bytes(4)
    srat = struct.pack("<IQ", 1, 0)
    srat += bytes([0, 16, 0, 0]) + struct.pack("<I", 1) + bytes(8)  # CPU APIC 0, domain 0
    srat += bytes([0, 16, 1, 2]) + struct.pack("<I", 1) + bytes(8)  # CPU APIC 2, domain 1
    srat += bytes([1, 40]) + struct.pack("<IHQQIIQ", 0, 0, 0, 0x8000000, 0, 1, 0)
    srat += bytes([1, 40]) + struct.pack("<IHQQIIQ", 1, 0, 0x8000000, 0x8000000, 0, 3, 0)
    srat += bytes([2, 24, 0, 0]) + struct.pack("<IIII", 1, 300, 1, 0)  # x2APIC affinity
    tables = [sdt_body(b"APIC", madt), sdt_body(b"FACP", bytes(fadt)), sdt_body(b"HPET", hpet), sdt_body(b"SRAT", srat)]
    listed = b"".join(struct.pack("<H", len(t)) + t for t in tables)
    write("acpi", "xsdt", b"\x00" + listed)
    write("acpi", "rsdt", b"\x02" + listed)
    write("acpi", "madt-only", b"\x00" + struct.pack("<H", len(tables[0])) + tables[0])


def bootargs():
    # A tree with /chosen/bootargs, as U-Boot's `bootm` passes it (the first byte: the buffer
    # size the target copies into).
    def node(name):
        return struct.pack(">I", 1) + name + b"\0" * (4 - len(name) % 4)

    def tree(args, extra=b""):
        value = args + b"\0"
        prop = struct.pack(">III", 3, len(value), 0) + value + b"\0" * (-len(value) % 4)
        model = b"QEMU virt\0"
        prop2 = struct.pack(">III", 3, len(model), 9) + model + b"\0" * (-len(model) % 4)
        st = node(b"") + prop2 + node(b"chosen") + prop + struct.pack(">I", 2) + extra
        st += struct.pack(">II", 2, 9)
        strings = b"bootargs\0model\0"
        structs = 40 + 16
        total = structs + len(st) + len(strings)
        header = struct.pack(">10I", 0xD00DFEED, total, structs, structs + len(st), 40, 17, 16, 0,
                             len(strings), len(st))
        return header + bytes(16) + st + strings

    write("bootargs", "chosen", b"\xff" + tree(b"lock=clh cpus=4 mode=bench"))
    write("bootargs", "short-buffer", b"\x05" + tree("lock=ticket \u00e9".encode()))
    write("bootargs", "memory-node", b"\x40" + tree(b"", node(b"memory@40000000") + struct.pack(">I", 2)))


def elf():
    code = b"\xf4" * 16
    # ELF64, EM_X86_64, one PT_LOAD at 0x400000.
    eh = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0x400078, 64, 0, 0, 64, 56, 1, 64, 0, 0)
    ph = struct.pack("<IIQQQQQQ", 1, 5, 0, 0x400000, 0x400000, 0x78 + len(code), 0x2000, 0x1000)
    write("elf", "x86_64", b"\x00" + eh + ph + code)
    # ELF32, EM_ARM, a text and a data segment.
    eh = b"\x7fELF" + bytes([1, 1, 1]) + bytes(9) + struct.pack("<HHIIIIIHHHHHH", 2, 40, 1, 0x10054, 52, 0, 0, 52, 32, 2, 40, 0, 0)
    ph = struct.pack("<IIIIIIII", 1, 0, 0x10000, 0x10000, 0x54 + len(code), 0x54 + len(code), 5, 0x1000)
    ph += struct.pack("<IIIIIIII", 1, 0, 0x20000, 0x20000, 0x10, 0x100, 6, 0x1000)
    write("elf", "armv7", b"\x01" + eh + ph + code)


def trace():
    def header(cores, strategy, records):
        return b"LKTRACE\0" + struct.pack("<HHHHQQ", 2, 112, cores, strategy, 2_000_000_000, records)

    def record(entry, core, thread, kind=0, flags=0, objects=()):
        words = [entry & 0xFFFFFFFF, entry >> 32, 10, 20, 30, 40, thread, core | (7 << 16),
                 kind | (1 << 8) | (flags << 16), len(objects) << 16]
        for (oid, acq, wait) in objects:
            words += [oid, acq, wait]
        words += [0] * (28 - len(words))
        return struct.pack("<28I", *words)

    recs = [record(1000 + 100 * i, i % 2, 5 + i % 2, kind=i % 3, flags=i % 2) for i in range(6)]
    write("trace", "big-lock", header(2, 0, len(recs)) + b"".join(recs))
    recs = [record(500, 0, 1, objects=[(3, 20, 15), (4, 25, 20)]), record(900, 1, 2, flags=2, objects=[(3, 22, 1)])]
    write("trace", "fine-grained", header(2, 1, len(recs)) + b"".join(recs))
    write("trace", "empty", header(1, 3, 0))


def frame_ring():
    write("frame_ring", "fill-and-drain", bytes([3, 5, 7, 9, 11, 0, 0, 0, 0, 0]))
    write("frame_ring", "long-frames", bytes([255, 129, 0, 201, 0, 0]))
    write("frame_ring", "wrap", bytes([1, 0, 3, 0, 5, 0, 7, 0, 9, 0, 11, 0, 13, 0]))


if __name__ == "__main__":
    for f in [kv_resp, abi_syscall, multiboot2, acpi, bootargs, elf, trace, frame_ring]:
        f()

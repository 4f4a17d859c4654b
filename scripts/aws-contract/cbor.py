"""Just enough CBOR (RFC 8949) to read Smithy RPC v2 bodies: every major type, indefinite
lengths, and tag 1 (epoch timestamps, as Smithy sends them), with no dependency to pin."""

import datetime as dt
import struct


class CborError(ValueError):
    pass


def loads(data):
    value, end = _item(memoryview(bytes(data)), 0)
    if end != len(data):
        raise CborError(f"{len(data) - end} bytes after the first item")
    return value


def _argument(data, pos, info):
    if info < 24:
        return info, pos
    sizes = {24: 1, 25: 2, 26: 4, 27: 8}
    if info not in sizes:
        raise CborError(f"reserved additional information {info}")
    n = sizes[info]
    if pos + n > len(data):
        raise CborError("truncated argument")
    return int.from_bytes(data[pos:pos + n], "big"), pos + n


_BREAK = object()


def _item(data, pos):
    if pos >= len(data):
        raise CborError("truncated item")
    initial = data[pos]
    major, info = initial >> 5, initial & 0x1F
    pos += 1
    if major == 7:
        return _simple(data, pos, info)
    if info == 31:
        return _indefinite(data, pos, major)
    arg, pos = _argument(data, pos, info)
    if major == 0:
        return arg, pos
    if major == 1:
        return -1 - arg, pos
    if major in (2, 3):
        chunk = bytes(data[pos:pos + arg])
        if len(chunk) != arg:
            raise CborError("truncated string")
        return (chunk if major == 2 else chunk.decode("utf-8")), pos + arg
    if major == 4:
        items = []
        for _ in range(arg):
            item, pos = _item(data, pos)
            items.append(item)
        return items, pos
    if major == 5:
        mapping = {}
        for _ in range(arg):
            key, pos = _item(data, pos)
            mapping[key], pos = _item(data, pos)
        return mapping, pos
    value, pos = _item(data, pos)  # major 6, a tag
    if arg == 1 and isinstance(value, (int, float)):
        return dt.datetime.fromtimestamp(value, dt.timezone.utc), pos
    return value, pos


def _simple(data, pos, info):
    if info == 20:
        return False, pos
    if info == 21:
        return True, pos
    if info in (22, 23):
        return None, pos
    if info == 31:
        return _BREAK, pos
    formats = {25: (">e", 2), 26: (">f", 4), 27: (">d", 8)}
    if info in formats:
        fmt, n = formats[info]
        return struct.unpack(fmt, bytes(data[pos:pos + n]))[0], pos + n
    raise CborError(f"unsupported simple value {info}")


def _indefinite(data, pos, major):
    items = []
    while True:
        item, pos = _item(data, pos)
        if item is _BREAK:
            break
        items.append(item)
    if major == 2:
        return b"".join(items), pos
    if major == 3:
        return "".join(items), pos
    if major == 4:
        return items, pos
    if major == 5:
        return dict(zip(items[::2], items[1::2])), pos
    raise CborError(f"indefinite length on major type {major}")

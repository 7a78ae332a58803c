"""The inputs of the benchmarks: sample bytes for the codec, Arrow tables for IPC and memory.

Everything is deterministic (numpy seed 0, or Python's ``random`` with a fixed seed) and,
where an input is used by many workloads, cached:

- :func:`sample_data` gives realistic bytes of any size (half an int64 column, half log-like
  text); :func:`sample_frame` and :func:`sample_buffers` are made from it.
- :func:`log_records` gives small JSON log records, for dictionaries.
- :func:`int32_table`, :func:`lineitem_table` and :func:`small_batches_table` are the tables of
  the IPC workloads (writer, reader, threads).
- :func:`int64_seq_table`, :func:`int64_random_table`, :func:`uuid_table`,
  :func:`json_text_table` and :func:`lineitem_bytes_table` are the inputs of the memory table;
  they are built afresh each time (some are hundreds of MB).

numpy and pyarrow are imported by the functions that need them, so that the codec workloads
run without them.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

KiB = 1024
MiB = 1024 * KiB

#: Bytes of JSON-like text per row of :func:`json_text_table`.
TEXT_ROW_BYTES = 8 * KiB


# --------------------------------------------------------------------------------------------
# Sample bytes


def format_size(n: int) -> str:
    """1024 -> '1KiB', 4194304 -> '4MiB', 300 -> '300B'."""
    for unit, scale in (("MiB", MiB), ("KiB", KiB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


_LOG_WORDS = (
    "GET POST PUT /api/v1/users /api/v1/orders /api/v1/items /health INFO WARN DEBUG ERROR "
    "alice bob carol dave erin frank ok cache_miss timeout retry eu-west-1 us-east-2 "
    "checkout login logout search basket payment shipped pending refunded"
).split()


def _int_column(nbytes: int, seed: int) -> bytes:
    """A little-endian int64 column of slowly varying values (a timestamp-like random walk)."""
    count = -(-nbytes // 8)
    try:
        import numpy as np
    except ImportError:
        import random
        from array import array

        rng = random.Random(seed)
        col = array("q")
        value = 1_700_000_000_000
        for _ in range(count):
            value += rng.randint(-3, 3) + (
                rng.randint(-(10**6), 10**6) if rng.random() < 1e-3 else 0
            )
            col.append(value)
        if sys.byteorder == "big":
            col.byteswap()
        return col.tobytes()[:nbytes]
    gen = np.random.default_rng(seed)
    steps = gen.integers(-3, 4, size=count)
    jumps = np.where(gen.random(count) < 1e-3, gen.integers(-(10**6), 10**6, size=count), 0)
    values = 1_700_000_000_000 + np.cumsum(steps + jumps)
    return bytes(values.astype("<i8").tobytes()[:nbytes])


def _log_text(nbytes: int, seed: int) -> bytes:
    """Log-like text lines: a timestamp, words from a small vocabulary and some numbers."""
    import random

    rng = random.Random(seed)
    lines: list[str] = []
    total = 0
    ts = 1_700_000_000
    while total < nbytes:
        ts += rng.randint(0, 2)
        words = " ".join(rng.choice(_LOG_WORDS) for _ in range(rng.randint(3, 6)))
        status = rng.choice((200, 200, 200, 404, 500))
        line = f"{ts} {words} status={status} ms={rng.randint(1, 999)}\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()[:nbytes]


@functools.lru_cache(maxsize=32)
def sample_data(size: int, seed: int = 0) -> bytes:
    """``size`` bytes of realistic data: half an int64 column, half log-like text."""
    half = size // 2
    return _int_column(half, seed) + _log_text(size - half, seed + 1)


@functools.lru_cache(maxsize=32)
def sample_frame(size: int, level: int = 3) -> bytes:
    """``sample_data(size)`` compressed into one zstd frame by zstdpool."""
    import zstdpool

    frame: bytes = zstdpool.compress(sample_data(size), level)
    return frame


@functools.lru_cache(maxsize=4)
def sample_buffers(count: int, size: int) -> list[bytes]:
    """``count`` distinct buffers of ``size`` bytes each, cut from one sample."""
    data = sample_data(count * size, seed=7)
    return [data[i * size : (i + 1) * size] for i in range(count)]


# --------------------------------------------------------------------------------------------
# The tables of the IPC workloads


_SERVICES = ("api-gateway", "billing", "search", "auth", "inventory", "checkout")
_PATHS = ("/v1/items", "/v1/orders", "/v1/users", "/v1/search", "/healthz", "/v1/cart")
_TRACE_EVENTS = ("cache_hit", "cache_miss", "db_query", "retry", "rpc_call", "serialize", "auth_ok")


def log_record(size: int, index: int, rng: Any) -> bytes:
    """One JSON log or telemetry record of about ``size`` bytes: the fixed keys, enumerated
    values and varying ids and numbers of a service's structured logs; records past 300 bytes
    carry a list of timed events, as traces do, until they reach ``size``."""
    import json

    record: dict[str, Any] = {
        "ts": f"2026-12-02T{index // 3600 % 24:02d}:{index // 60 % 60:02d}:{index % 60:02d}."
        f"{rng.randrange(1000):03d}Z",
        "level": rng.choice(("INFO", "INFO", "INFO", "WARN", "DEBUG", "ERROR")),
        "service": rng.choice(_SERVICES),
        "host": f"node-{rng.randrange(24):02d}.eu-west-1.internal",
        "trace_id": f"{rng.getrandbits(64):016x}",
        "method": rng.choice(("GET", "GET", "POST", "PUT")),
        "path": f"{rng.choice(_PATHS)}/{rng.randrange(100000)}",
        "status": rng.choice((200, 200, 200, 201, 204, 404, 500)),
        "latency_ms": round(rng.lognormvariate(3, 1), 3),
    }
    text = json.dumps(record, separators=(",", ":"))
    events: list[dict[str, Any]] = []
    while len(text) < size - 80:
        events.append(
            {
                "name": rng.choice(_TRACE_EVENTS),
                "start_us": rng.randrange(10**6),
                "duration_us": rng.randrange(5000),
                "ok": rng.random() < 0.95,
                "attrs": {"shard": rng.randrange(16), "region": "eu-west-1"},
            }
        )
        record["events"] = events
        text = json.dumps(record, separators=(",", ":"))
    return text.encode()


@functools.cache
def log_records(count: int, size: int, seed: int = 0) -> tuple[bytes, ...]:
    """``count`` records of about ``size`` bytes from :func:`log_record` (the seed picks the
    set: a dictionary is trained on one seed's records and measured on another's)."""
    import random

    rng = random.Random(seed * 1_000_003 + size)
    return tuple(log_record(size, i, rng) for i in range(count))


def have_numpy() -> bool:
    """True if numpy imports: every table here is built with it."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


INT32_DESCRIPTION = "one int32 column: np.arange(n) * 3 + noise in [0, 4) (numpy seed 0)"
LINEITEM_DESCRIPTION = (
    "a TPC-H lineitem-like table of 16 columns (int64 keys, int32 linenumber, decimal128(15,2) "
    "quantity/extendedprice/discount/tax, 1-char flags, 3 date32, low-cardinality "
    "shipinstruct/shipmode, 10-40 char comments; numpy seed 0)"
)
SMALL_BATCHES_DESCRIPTION = "int32 id (np.arange * 3 + noise) + a string column of short words"


@functools.lru_cache(maxsize=8)
def int32_table(rows: int) -> pa.Table:
    """One int32 column ``value`` of sequential values with a little noise: ``3 i + [0, 4)``."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    values = np.arange(rows, dtype=np.int32) * 3 + rng.integers(0, 4, rows, dtype=np.int32)
    return pa.table({"value": values})


_LINEITEM_WORDS = (
    "carefully final deposits furiously ironic packages requests regular accounts blithely "
    "express pending slyly quickly bold special theodolites instructions foxes unusual even "
    "asymptotes dependencies platelets pinto beans sleep haggle nag wake cajole are about above "
    "according to the among along across after against fluffily silent idle daring quiet"
).split()
_SHIPINSTRUCT = ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")
_SHIPMODE = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
_DAY_1992 = 8035  # 1992-01-01 in days since the epoch
_DAY_CURRENT = 9298  # 1995-06-17, TPC-H's "current date" for the flags


def _decimal(cents: Any) -> pa.Array:
    """A decimal128(15, 2) array from int64 hundredths (non-negative)."""
    import numpy as np
    import pyarrow as pa

    words = np.zeros((len(cents), 2), dtype="<i8")
    words[:, 0] = cents
    return pa.Array.from_buffers(pa.decimal128(15, 2), len(cents), [None, pa.py_buffer(words)])


def _pick(choices: Sequence[str], index: Any) -> pa.Array:
    import pyarrow as pa

    return pa.array(list(choices), pa.string()).take(pa.array(index))


def _comments(rng: Any, rows: int) -> pa.Array:
    """10-40 character slices of a long text of lineitem-comment words, built vectorized."""
    import numpy as np
    import pyarrow as pa

    text = " ".join(
        np.array(_LINEITEM_WORDS)[rng.integers(0, len(_LINEITEM_WORDS), 100_000)].tolist()
    ).encode()
    pool = np.frombuffer(text, dtype=np.uint8)
    lengths = rng.integers(10, 41, rows)
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    starts = rng.integers(0, len(pool) - 41, rows)
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    data = pool[index]
    return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data))


@functools.lru_cache(maxsize=4)
def lineitem_table(rows: int) -> pa.Table:
    """A TPC-H lineitem-shaped table of ``rows`` rows, deterministic (numpy seed 0)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    # Orders of 1-7 lines, with sparse keys as in TPC-H (8 keys used out of every 32).
    sizes = rng.integers(1, 8, rows)
    order = np.repeat(np.arange(rows), sizes)[:rows]
    first = np.flatnonzero(np.r_[True, order[1:] != order[:-1]])
    linenumber = np.arange(rows) - np.repeat(first, np.diff(np.r_[first, rows])) + 1
    orderkey = (order // 8) * 32 + order % 8 + 1
    partkey = rng.integers(1, 200_001, rows)
    suppkey = (partkey + rng.integers(0, 4, rows) * 2_500) % 10_000 + 1
    quantity = rng.integers(1, 51, rows)
    retail_cents = 90_000 + (partkey // 10) % 20_001 + 100 * (partkey % 1_000)
    orderdate = (_DAY_1992 + rng.integers(0, 2_406, rows))[order]  # one date per order
    shipdate = orderdate + rng.integers(1, 122, rows)
    commitdate = orderdate + rng.integers(30, 91, rows)
    receiptdate = shipdate + rng.integers(1, 31, rows)
    returned = np.where(rng.random(rows) < 0.5, 0, 1)  # R or A once received
    returnflag = np.where(receiptdate <= _DAY_CURRENT, returned, 2)
    linestatus = np.where(shipdate > _DAY_CURRENT, 0, 1)
    return pa.table(
        {
            "l_orderkey": orderkey.astype(np.int64),
            "l_partkey": partkey.astype(np.int64),
            "l_suppkey": suppkey.astype(np.int64),
            "l_linenumber": linenumber.astype(np.int32),
            "l_quantity": _decimal(quantity * 100),
            "l_extendedprice": _decimal(quantity * retail_cents),
            "l_discount": _decimal(rng.integers(0, 11, rows)),
            "l_tax": _decimal(rng.integers(0, 9, rows)),
            "l_returnflag": _pick("RAN", returnflag),
            "l_linestatus": _pick("OF", linestatus),
            "l_shipdate": pa.array(shipdate.astype(np.int32)).cast(pa.date32()),
            "l_commitdate": pa.array(commitdate.astype(np.int32)).cast(pa.date32()),
            "l_receiptdate": pa.array(receiptdate.astype(np.int32)).cast(pa.date32()),
            "l_shipinstruct": _pick(_SHIPINSTRUCT, rng.integers(0, 4, rows)),
            "l_shipmode": _pick(_SHIPMODE, rng.integers(0, 7, rows)),
            "l_comment": _comments(rng, rows),
        }
    )


@functools.lru_cache(maxsize=4)
def small_batches_table(rows: int) -> pa.Table:
    """``id`` int32 (``3 i + [0, 4)``) and ``word`` (short words from a small vocabulary)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    ids = np.arange(rows, dtype=np.int32) * 3 + rng.integers(0, 4, rows, dtype=np.int32)
    return pa.table(
        {"id": ids, "word": _pick(_LINEITEM_WORDS, rng.integers(0, len(_LINEITEM_WORDS), rows))}
    )


# --------------------------------------------------------------------------------------------
# The inputs of the memory table (built afresh: not cached)


def int64_seq_table(rows: int) -> pa.Table:
    """One int64 column ``0, 1, 2, ...``."""
    import numpy as np
    import pyarrow as pa

    return pa.table({"value": np.arange(rows, dtype=np.int64)})


def int64_random_table(rows: int) -> pa.Table:
    """One int64 column of uniform random values (numpy seed 0): incompressible."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    info = np.iinfo(np.int64)
    return pa.table({"value": rng.integers(info.min, info.max, rows, dtype=np.int64)})


def uuid_table(rows: int) -> pa.Table:
    """One string column of random version-4 UUIDs (``8-4-4-4-12`` hex digits; seed 0)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    raw = np.frombuffer(rng.bytes(16 * rows), dtype=np.uint8).reshape(rows, 16).copy()
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40  # version 4
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80  # RFC 4122 variant
    hexdigits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    digits = np.empty((rows, 32), dtype=np.uint8)
    digits[:, 0::2] = hexdigits[raw >> 4]
    digits[:, 1::2] = hexdigits[raw & 0x0F]
    text = np.full((rows, 36), ord("-"), dtype=np.uint8)
    for src, dst, n in ((0, 0, 8), (8, 9, 4), (12, 14, 4), (16, 19, 4), (20, 24, 12)):
        text[:, dst : dst + n] = digits[:, src : src + n]
    offsets = np.arange(rows + 1, dtype=np.int32) * 36
    data = pa.py_buffer(text.tobytes())
    return pa.table({"uuid": pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), data)})


_EVENTS = ("page_view", "click", "add_to_cart", "checkout", "login", "logout", "search")
_USERS = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy")
_PAGES = ("/", "/search", "/cart", "/checkout", "/account", "/product", "/help", "/orders")
_AGENTS = (
    "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/126.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) Safari/605.1.15",
    "curl/8.8.0",
)
_COUNTRIES = ("DE", "FR", "US", "GB", "JP", "BR", "IN", "NL")


def json_text_table(nbytes: int) -> pa.Table:
    """One string column of JSON-like text, about 8 KiB per row, ``nbytes`` in all (seed 0).

    Each row is a JSON array of event records (keys repeat, values vary: ids, timestamps,
    amounts, words from small vocabularies, and a random hex session id).
    """
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    rows = max(1, -(-nbytes // TEXT_ROW_BYTES))
    per_row = 40  # records of about 205 bytes: about 8 KiB a row
    n = rows * per_row
    ids = 10_000_000 + np.arange(n) * 7 + rng.integers(0, 7, n)
    ts = 1_717_000_000 + np.cumsum(rng.integers(0, 3, n))
    user = rng.integers(0, len(_USERS), n)
    event = rng.integers(0, len(_EVENTS), n)
    page = rng.integers(0, len(_PAGES), n)
    agent = rng.integers(0, len(_AGENTS), n)
    country = rng.integers(0, len(_COUNTRIES), n)
    cents = rng.integers(0, 100_000, n)
    ms = rng.integers(1, 2_000, n)
    session = rng.integers(0, 1 << 48, n)
    records = [
        f'{{"id":{ids[i]},"ts":{ts[i]},"user":"{_USERS[user[i]]}",'
        f'"event":"{_EVENTS[event[i]]}","page":"{_PAGES[page[i]]}",'
        f'"country":"{_COUNTRIES[country[i]]}","amount":{cents[i] // 100}.{cents[i] % 100:02d},'
        f'"latency_ms":{ms[i]},"session":"{session[i]:012x}","agent":"{_AGENTS[agent[i]]}"}}'
        for i in range(n)
    ]
    text = ["[" + ",".join(records[r * per_row : (r + 1) * per_row]) + "]" for r in range(rows)]
    return pa.table({"json": pa.array(text, pa.string())})


def lineitem_rows_table(rows: int) -> pa.Table:
    """:func:`lineitem_table` of ``rows`` rows, built afresh (not through its cache)."""
    table: pa.Table = lineitem_table.__wrapped__(rows)
    return table


def lineitem_bytes_table(nbytes: int) -> pa.Table:
    """The lineitem table with as many rows as make about ``nbytes`` of Arrow buffers."""
    per_row = lineitem_rows_table(10_000).nbytes / 10_000
    return lineitem_rows_table(max(1, round(nbytes / per_row)))


@functools.lru_cache(maxsize=4)
def partitioned_table(rows: int, partitions: int) -> pa.Table:
    """iceberg-go's partitioned-write benchmark shape: ``id`` int64, ``ts`` timestamp with
    time zone, ``partition_key`` int32 (``id % partitions``), ``value`` int64."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    ids = np.arange(rows, dtype=np.int64)
    start = 1_700_000_000_000_000
    return pa.table(
        {
            "id": pa.array(ids),
            "ts": pa.array(start + ids * 1_000_000, pa.timestamp("us", tz="UTC")),
            "partition_key": pa.array((ids % partitions).astype(np.int32)),
            "value": pa.array(rng.integers(0, 1 << 40, rows, dtype=np.int64)),
        }
    )

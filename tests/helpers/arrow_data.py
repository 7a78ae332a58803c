"""Arrow data of every type pyarrow writes to IPC, shared by the IPC test modules.

Everything here is deterministic for a given ``(n, seed)``:

- :func:`typed_arrays` gives ``[(name, array), ...]``, one array of each type, with nulls.
- :func:`typed_table` puts them all in one table (with schema and field metadata).
- :func:`null_arrays` gives an all-null array of every type.
- :func:`chunked` splits a table into many record batches (sharing dictionaries).
- :func:`compressible_table` / :func:`random_bytes_table` give data that compresses well or
  not at all.
- :class:`ScaledType` is a registered ``pa.ExtensionType`` subclass (registered on import).
"""

from __future__ import annotations

import decimal
import random
import string

import pyarrow as pa
import pyarrow.compute as pc

from tests.helpers.peers import np

__all__ = [
    "SLICE_PANICS",
    "ScaledType",
    "chunked",
    "compressible_table",
    "null_arrays",
    "random_bytes_table",
    "typed_arrays",
    "typed_table",
    "type_names",
]

NULL_FRACTION = 0.2

# Columns of :func:`typed_arrays` that arrow-rs 59 cannot import through the C data interface
# once sliced to a non-zero offset (a struct directly inside a struct, fixed-size list or sparse
# union panics with "assertion failed: end <= self.len()"; apache/arrow-rs#9235). Tests that
# slice or re-chunk tables leave these out and test the bug on its own.
SLICE_PANICS = frozenset({"struct_of_struct"})
TIMEZONES = (None, "UTC", "America/New_York")
TEXT_ALPHABET = string.ascii_letters + string.digits + " éß✓€"


class ScaledType(pa.ExtensionType):
    """An int64 extension type with a parameter, serialized in the extension metadata."""

    NAME = "zstdpool.tests.scaled"

    def __init__(self, scale: int = 1):
        self.scale = scale
        super().__init__(pa.int64(), self.NAME)

    def __arrow_ext_serialize__(self) -> bytes:
        return str(self.scale).encode()

    # pyarrow's default equality ignores the parameter; two scales are two different types.
    def __eq__(self, other) -> bool:
        return isinstance(other, ScaledType) and other.scale == self.scale

    def __hash__(self) -> int:
        return hash((self.NAME, self.scale))

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls(int(serialized.decode()))


def _register_scaled() -> None:
    try:
        pa.register_extension_type(ScaledType())
    except pa.ArrowKeyError:
        pass  # already registered (module imported twice under different names)


_register_scaled()


class _Gen:
    """Random values with nulls, from one seed."""

    def __init__(self, n: int, seed: int):
        self.n = n
        self.np = np.random.default_rng(seed)
        self.py = random.Random(seed)

    def mask(self) -> np.ndarray:
        return self.np.random(self.n) < NULL_FRACTION

    def nullify(self, values: list) -> list:
        return [None if m else v for v, m in zip(values, self.mask(), strict=True)]

    def ints(self, dtype) -> np.ndarray:
        info = np.iinfo(dtype)
        return self.np.integers(info.min, info.max, size=self.n, dtype=dtype, endpoint=True)

    def ranged(self, lo: int, hi: int) -> list[int]:
        return [int(v) for v in self.np.integers(lo, hi, size=self.n)]

    def text(self, max_len: int = 30) -> str:
        k = self.py.randint(0, max_len)
        return "".join(self.py.choice(TEXT_ALPHABET) for _ in range(k))

    def texts(self, max_len: int = 30) -> list[str | None]:
        return self.nullify([self.text(max_len) for _ in range(self.n)])

    def blobs(self, max_len: int = 30) -> list[bytes | None]:
        return self.nullify([self.py.randbytes(self.py.randint(0, max_len)) for _ in range(self.n)])

    def lists(self, item, max_len: int = 4) -> list:
        return self.nullify(
            [[item() for _ in range(self.py.randint(0, max_len))] for _ in range(self.n)]
        )

    def maybe(self, value):
        return None if self.py.random() < NULL_FRACTION else value


def _decimals(g: _Gen, precision: int, scale: int) -> list:
    bound = 10**precision
    return g.nullify(
        [decimal.Decimal(g.py.randrange(-bound + 1, bound)).scaleb(-scale) for _ in range(g.n)]
    )


def _union(g: _Gen, mode: str) -> pa.Array:
    """A union of int64 and string children with type codes 5 and 9 (not 0, 1)."""
    codes = [5, 9]
    which = g.np.integers(0, 2, size=g.n).astype(np.int8)
    type_ids = pa.array(np.array(codes, dtype=np.int8)[which], pa.int8())
    ints = pa.array(g.nullify(g.ranged(-1000, 1000)), pa.int64())
    strs = pa.array(g.texts(), pa.string())
    names = ["i", "s"]
    if mode == "sparse":
        return pa.UnionArray.from_sparse(type_ids, [ints, strs], names, codes)
    # dense: each child holds only its own values, in order
    n_int = int((which == 0).sum())
    offsets = np.zeros(g.n, dtype=np.int32)
    offsets[which == 0] = np.arange(n_int, dtype=np.int32)
    offsets[which == 1] = np.arange(g.n - n_int, dtype=np.int32)
    return pa.UnionArray.from_dense(
        type_ids,
        pa.array(offsets, pa.int32()),
        [ints.slice(0, n_int), strs.slice(0, g.n - n_int)],
        names,
        codes,
    )


def _run_end_encoded(
    g: _Gen, run_end_type: pa.DataType, value_type: pa.DataType, values: list
) -> pa.Array:
    # Repeat each value a few times so that there are real runs.
    expanded: list = []
    for v in values:
        expanded.extend([v] * g.py.randint(1, 3))
    return pc.run_end_encode(pa.array(expanded[: g.n], value_type), run_end_type=run_end_type)


def typed_arrays(n: int = 40, *, seed: int = 0) -> list[tuple[str, pa.Array]]:
    """One array of ``n`` values (about a fifth null) for every type pyarrow writes to IPC.

    Names are unique and usable as column names; the list order is stable.
    """
    g = _Gen(n, seed)
    out: list[tuple[str, pa.Array]] = []

    def add(name: str, array: pa.Array) -> None:
        assert len(array) == n, (name, len(array), n)
        array.validate(full=True)
        out.append((name, array))

    # Integers of every width, signed and unsigned, over their whole range.
    for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
        add(np.dtype(dtype).name, pa.array(g.ints(dtype), mask=g.mask()))
    add("float16", pa.array(g.np.standard_normal(n).astype(np.float16), mask=g.mask()))
    add("float32", pa.array(g.np.standard_normal(n).astype(np.float32), mask=g.mask()))
    add("float64", pa.array(g.np.standard_normal(n) * 1e6, mask=g.mask()))
    add("bool", pa.array(g.nullify([bool(b) for b in g.np.integers(0, 2, n)]), pa.bool_()))

    add("decimal32", pa.array(_decimals(g, 9, 2), pa.decimal32(9, 2)))
    add("decimal64", pa.array(_decimals(g, 18, 3), pa.decimal64(18, 3)))
    add("decimal128", pa.array(_decimals(g, 38, 10), pa.decimal128(38, 10)))
    add("decimal256", pa.array(_decimals(g, 76, 20), pa.decimal256(76, 20)))

    add("date32", pa.array(g.nullify(g.ranged(-100_000, 100_000)), pa.date32()))
    days = g.ranged(-100_000, 100_000)
    add("date64", pa.array(g.nullify([d * 86_400_000 for d in days]), pa.date64()))
    add("time32_s", pa.array(g.nullify(g.ranged(0, 86_400)), pa.time32("s")))
    add("time32_ms", pa.array(g.nullify(g.ranged(0, 86_400_000)), pa.time32("ms")))
    add("time64_us", pa.array(g.nullify(g.ranged(0, 86_400 * 10**6)), pa.time64("us")))
    add("time64_ns", pa.array(g.nullify(g.ranged(0, 86_400 * 10**9)), pa.time64("ns")))
    for unit, per_second in (("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9)):
        for tz in TIMEZONES:
            name = f"timestamp_{unit}" + (f"_{tz.split('/')[-1].lower()}" if tz else "")
            stamps = g.ranged(-(2**31), 2**31)
            add(name, pa.array(g.nullify([s * per_second for s in stamps]), pa.timestamp(unit, tz)))
        add(f"duration_{unit}", pa.array(g.nullify(g.ranged(-(2**40), 2**40)), pa.duration(unit)))
    add(
        "month_day_nano_interval",
        pa.array(
            g.nullify(
                [
                    pa.MonthDayNano(
                        [
                            g.py.randint(-99, 99),
                            g.py.randint(-99, 99),
                            g.py.randint(-(10**15), 10**15),
                        ]
                    )
                    for _ in range(n)
                ]
            ),
            pa.month_day_nano_interval(),
        ),
    )

    # Strings and binaries; views get values longer than 12 bytes (out-of-line buffers).
    add("string", pa.array(g.texts(), pa.string()))
    add("large_string", pa.array(g.texts(), pa.large_string()))
    add("string_view", pa.array(g.texts(60), pa.string_view()))
    add("binary", pa.array(g.blobs(), pa.binary()))
    add("large_binary", pa.array(g.blobs(), pa.large_binary()))
    add("binary_view", pa.array(g.blobs(60), pa.binary_view()))
    add(
        "fixed_size_binary",
        pa.array(g.nullify([g.py.randbytes(5) for _ in range(n)]), pa.binary(5)),
    )

    # Nested types.
    small_int = lambda: g.maybe(g.py.randint(-1000, 1000))  # noqa: E731
    short_text = lambda: g.maybe(g.text(8))  # noqa: E731
    add("list", pa.array(g.lists(small_int), pa.list_(pa.int32())))
    add("large_list", pa.array(g.lists(short_text), pa.large_list(pa.string())))
    add(
        "fixed_size_list",
        pa.array(
            g.nullify([[g.maybe(g.py.random()) for _ in range(3)] for _ in range(n)]),
            pa.list_(pa.float64(), 3),
        ),
    )
    add("list_view", pa.array(g.lists(small_int), pa.list_view(pa.int16())))
    add("large_list_view", pa.array(g.lists(short_text), pa.large_list_view(pa.string())))
    struct_type = pa.struct(
        [
            pa.field("i", pa.int32()),
            pa.field("s", pa.string()),
            pa.field("l", pa.list_(pa.string())),
            pa.field("req", pa.int8(), nullable=False),
        ]
    )
    add(
        "struct",
        pa.array(
            g.nullify(
                [
                    {
                        "i": small_int(),
                        "s": short_text(),
                        "l": g.maybe([short_text() for _ in range(g.py.randint(0, 3))]),
                        "req": g.py.randint(-100, 100),
                    }
                    for _ in range(n)
                ]
            ),
            struct_type,
        ),
    )
    inner_type = pa.struct([pa.field("f", pa.float64()), pa.field("b", pa.bool_())])
    add(
        "struct_of_struct",
        pa.array(
            g.nullify(
                [
                    {
                        "inner": g.maybe({"f": g.py.random(), "b": g.maybe(g.py.random() < 0.5)}),
                        "tag": short_text(),
                    }
                    for _ in range(n)
                ]
            ),
            pa.struct([pa.field("inner", inner_type), pa.field("tag", pa.string())]),
        ),
    )
    add(
        "list_of_struct",
        pa.array(
            g.lists(lambda: g.maybe({"a": small_int(), "b": [short_text()]})),
            pa.list_(pa.struct([("a", pa.int64()), ("b", pa.list_(pa.string()))])),
        ),
    )
    add(
        "map",
        pa.array(
            g.nullify(
                [[(g.text(6), small_int()) for _ in range(g.py.randint(0, 3))] for _ in range(n)]
            ),
            pa.map_(pa.string(), pa.int64()),
        ),
    )
    add("dense_union", _union(g, "dense"))
    add("sparse_union", _union(g, "sparse"))

    # Dictionaries: string and integer values, ordered, and one nested in a list.
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    add(
        "dictionary_string",
        pa.array(g.nullify([g.py.choice(words) for _ in range(n)])).dictionary_encode()
        if n
        else pa.array([], pa.dictionary(pa.int32(), pa.string())),
    )
    add(
        "dictionary_int",
        pa.DictionaryArray.from_arrays(
            pa.array(g.nullify(g.ranged(0, 4)), pa.int8()),
            pa.array([10**12, -7, 0, 42], pa.int64()),
        ),
    )
    add(
        "dictionary_ordered",
        pa.DictionaryArray.from_arrays(
            pa.array(g.nullify(g.ranged(0, 3)), pa.int16()),
            pa.array(["low", "mid", "high"]),
            ordered=True,
        ),
    )
    list_dict_type = pa.list_(pa.dictionary(pa.int16(), pa.string()))
    offsets = [0]
    for _ in range(n):
        offsets.append(offsets[-1] + g.py.randint(0, 3))
    inner = pa.DictionaryArray.from_arrays(
        pa.array([g.py.randint(0, 2) for _ in range(offsets[-1])], pa.int16()),
        pa.array(["x", "yy", "zzz"]),
    )
    add(
        "list_of_dictionary",
        pa.ListArray.from_arrays(
            pa.array(offsets, pa.int32()), inner, type=list_dict_type, mask=pa.array(g.mask())
        ),
    )

    add("run_end_encoded", _run_end_encoded(g, pa.int32(), pa.string(), g.texts(6)))
    add(
        "run_end_encoded_int16",
        _run_end_encoded(g, pa.int16(), pa.int64(), g.nullify(g.ranged(0, 5))),
    )

    # Extension types: the canonical UUID, and a registered Python subclass.
    add("uuid", pa.array(g.nullify([g.py.randbytes(16) for _ in range(n)]), pa.uuid()))
    add(
        "extension_scaled",
        pa.ExtensionArray.from_storage(
            ScaledType(1000), pa.array(g.nullify(g.ranged(-(10**9), 10**9)), pa.int64())
        ),
    )
    add("null", pa.nulls(n))
    return out


def type_names() -> list[str]:
    """The names :func:`typed_arrays` uses, in order (for test ids)."""
    return [name for name, _ in typed_arrays(0)]


def typed_table(
    n: int = 40,
    *,
    seed: int = 0,
    names: list[str] | None = None,
    metadata: bool = True,
) -> pa.Table:
    """All of :func:`typed_arrays` (or the named ones) as one table.

    With ``metadata``, the schema and every field carry key-value metadata.
    """
    arrays = [(k, a) for k, a in typed_arrays(n, seed=seed) if names is None or k in names]
    fields = [
        pa.field(k, a.type, metadata={"column": k, "ordinal": str(i)} if metadata else None)
        for i, (k, a) in enumerate(arrays)
    ]
    schema = pa.schema(fields, metadata={"source": "zstdpool tests"} if metadata else None)
    return pa.Table.from_arrays([a for _, a in arrays], schema=schema)


def null_arrays(n: int = 10) -> list[tuple[str, pa.Array]]:
    """An all-null array of ``n`` values for every type of :func:`typed_arrays`."""
    return [(name, pa.nulls(n, a.type)) for name, a in typed_arrays(0)]


def chunked(table: pa.Table, chunk_rows: int) -> pa.Table:
    """``table`` as record batches of at most ``chunk_rows`` rows (slices of one table, so
    dictionaries are shared and the IPC file format accepts them)."""
    table = table.combine_chunks()
    batches = table.to_batches(max_chunksize=chunk_rows)
    return pa.Table.from_batches(batches, schema=table.schema)


def compressible_table(n: int = 50_000) -> pa.Table:
    """Columns that compress well: slowly varying integers, repeated words, zeros."""
    idx = np.arange(n)
    return pa.table(
        {
            "slow": pa.array(idx // 100, pa.int64()),
            "word": pa.array(np.array(["north", "south", "east", "west"])[idx % 4]),
            "zero": pa.array(np.zeros(n), pa.float64()),
        }
    )


def random_bytes_table(n_bytes: int = 64 * 1024, *, seed: int = 1) -> pa.Table:
    """One non-null uint8 column of random bytes: its only body buffer cannot be compressed."""
    data = np.frombuffer(random.Random(seed).randbytes(n_bytes), dtype=np.uint8)
    return pa.table({"noise": pa.array(data, pa.uint8())})

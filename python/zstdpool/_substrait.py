"""A ``pyarrow.compute.Expression`` made into the dataset scanner's filter, through the one
view pyarrow gives of an expression's structure: its Substrait form
(``Expression.to_substrait``, a protobuf ``ExtendedExpression``). The few messages a filter is
made of are read here by hand (no protobuf library is a dependency): field references to
top-level columns, literals of plain types (booleans, integers, floats, strings, binaries,
dates, timestamps, decimals), the comparison, boolean and null-test functions,
and ``is_in`` (a ``SingularOrList``). Anything else makes the conversion give up, and the
expression is then applied by pyarrow as it is: a conversion is only ever an optimization (the
scanner then prunes row groups and pages by it and evaluates it in Rust).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc


class _Unsupported(Exception):
    """The expression holds something the conversion does not read."""


Fields = dict[int, list[Any]]


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(buf) or shift > 63:
            raise _Unsupported("a truncated varint")
        b = buf[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def _fields(buf: bytes) -> Fields:
    """A message's fields by number, each value in order: an int (varint), bytes (length
    delimited), or bytes of 4 or 8 (fixed)."""
    out: Fields = {}
    at = 0
    while at < len(buf):
        key, at = _varint(buf, at)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, at = _varint(buf, at)
        elif wire == 2:
            n, at = _varint(buf, at)
            if at + n > len(buf):
                raise _Unsupported("a truncated field")
            value, at = buf[at : at + n], at + n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            if at + n > len(buf):
                raise _Unsupported("a truncated field")
            value, at = buf[at : at + n], at + n
        else:
            raise _Unsupported(f"wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _one(fields: Fields, number: int) -> Any:
    values = fields.get(number)
    if not values or len(values) != 1:
        raise _Unsupported(f"field {number}")
    return values[0]


def _scalar(fields: Fields, number: int) -> int:
    """A varint field, 0 where it is absent (proto3 leaves a default value out)."""
    if number not in fields:
        return 0
    value = _one(fields, number)
    if not isinstance(value, int):
        raise _Unsupported(f"field {number}")
    return value


def _signed(value: int, bits: int) -> int:
    """A protobuf int32 or int64 (two's complement in a varint)."""
    value &= (1 << 64) - 1
    if value >= 1 << 63:
        value -= 1 << 64
    if bits == 32 and not -(1 << 31) <= value < (1 << 31):
        raise _Unsupported("an int32 out of range")
    return value


def _literal(buf: bytes) -> pa.Array:
    import pyarrow as pa

    f = _fields(buf)
    kinds = [k for k in f if k != 50]  # 50: nullable
    if len(kinds) != 1:
        raise _Unsupported("a literal")
    kind = kinds[0]
    v = _one(f, kind)
    if kind == 1:
        return pa.array([bool(v)], pa.bool_())
    if kind in (2, 3, 5, 7):
        t = {2: pa.int8(), 3: pa.int16(), 5: pa.int32(), 7: pa.int64()}[kind]
        return pa.array([_signed(v, 64 if kind == 7 else 32)], t)
    if kind == 10:
        return pa.array([struct.unpack("<f", v)[0]], pa.float32())
    if kind == 11:
        return pa.array([struct.unpack("<d", v)[0]], pa.float64())
    if kind == 12:
        return pa.array([v.decode("utf-8")], pa.string())
    if kind == 13:
        return pa.array([bytes(v)], pa.binary())
    if kind == 16:
        return pa.array([_signed(v, 32)], pa.int32()).cast(pa.date32())
    if kind in (14, 27):  # timestamp, timestamp_tz: microseconds (an instant, for _tz)
        tz = "UTC" if kind == 27 else None
        return pa.array([_signed(v, 64)], pa.int64()).cast(pa.timestamp("us", tz=tz))
    if kind in (34, 35):  # precision_timestamp(_tz): {precision, value}
        p = _fields(v)
        unit = {0: "s", 3: "ms", 6: "us", 9: "ns"}.get(_scalar(p, 1))
        if unit is None:
            raise _Unsupported("a timestamp precision")
        tz = "UTC" if kind == 35 else None
        return pa.array([_signed(_scalar(p, 2), 64)], pa.int64()).cast(pa.timestamp(unit, tz=tz))
    if kind == 24:  # decimal: {value (16 bytes, little-endian), precision, scale}
        d = _fields(v)
        raw = _one(d, 1)
        precision, scale = _scalar(d, 2), _scalar(d, 3)
        if not isinstance(raw, bytes) or len(raw) != 16 or not 0 < precision <= 38:
            raise _Unsupported("a decimal")
        import decimal

        unscaled = int.from_bytes(raw, "little", signed=True)
        value = decimal.Decimal(unscaled).scaleb(-scale)
        return pa.array([value], pa.decimal128(precision, scale))
    raise _Unsupported(f"a literal of kind {kind}")


def _column(buf: bytes, names: list[str]) -> str:
    """A FieldReference to a top-level column: its name."""
    f = _fields(buf)
    direct = _fields(_one(f, 1))  # direct_reference
    segment = _fields(_one(direct, 2))  # struct_field
    if 2 in segment:  # a child: a nested field
        raise _Unsupported("a nested field")
    index = _scalar(segment, 1)
    if not 0 <= index < len(names):
        raise _Unsupported("a field out of range")
    return names[index]


_COMPARISONS = {
    "equal": "=",
    "not_equal": "!=",
    "lt": "<",
    "lte": "<=",
    "gt": ">",
    "gte": ">=",
}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _expression(buf: bytes, functions: dict[int, str], names: list[str]) -> Any:
    """An Expression message as ("column", name), ("literal", array) or a filter node."""
    f = _fields(buf)
    if 1 in f:
        return ("literal", _literal(_one(f, 1)))
    if 2 in f:
        return ("column", _column(_one(f, 2), names))
    if 3 in f:
        return _function(_fields(_one(f, 3)), functions, names)
    if 8 in f:  # SingularOrList
        sol = _fields(_one(f, 8))
        value = _expression(_one(sol, 1), functions, names)
        if value[0] != "column":
            raise _Unsupported("is_in of an expression")
        options = [_expression(o, functions, names) for o in sol.get(2, [])]
        if not options or any(o[0] != "literal" for o in options):
            raise _Unsupported("is_in of expressions")
        import pyarrow as pa

        values = pa.concat_arrays([o[1] for o in options])
        if values.null_count:
            raise _Unsupported("is_in with a null")  # its null matching is not carried
        return ("in", value[1], values)
    raise _Unsupported("an expression kind")


def _function(f: Fields, functions: dict[int, str], names: list[str]) -> Any:
    if 6 in f:  # options (nan_is_null, ...): not carried
        raise _Unsupported("function options")
    name = functions.get(_scalar(f, 1))
    if name is None:
        raise _Unsupported("an undeclared function")
    arguments = [_fields(a) for a in f.get(4, [])]
    if any(3 not in a for a in arguments):
        raise _Unsupported("a non-value argument")
    args = [_expression(_one(a, 3), functions, names) for a in arguments]
    if name in ("and", "or"):
        if not args or any(a[0] in ("column", "literal") for a in args):
            raise _Unsupported(f"{name} of values")
        return (name, args)
    if name in ("not", "is_null", "is_not_null"):
        if len(args) != 1:
            raise _Unsupported(name)
        (arg,) = args
        if name == "not":
            if arg[0] in ("column", "literal"):
                raise _Unsupported("not of a value")
            return ("not", arg)
        if arg[0] != "column":
            raise _Unsupported(f"{name} of an expression")
        node = ("is_null", arg[1])
        return node if name == "is_null" else ("not", node)
    if name in _COMPARISONS:
        if len(args) != 2:
            raise _Unsupported(name)
        op = _COMPARISONS[name]
        (a, b) = args
        if a[0] == "column" and b[0] == "literal":
            return ("cmp", a[1], op, b[1])
        if a[0] == "literal" and b[0] == "column":
            return ("cmp", b[1], _FLIPPED[op], a[1])
        raise _Unsupported("a comparison of two columns or two values")
    raise _Unsupported(f"the function {name}")


def to_tree(expression: pc.Expression, schema: pa.Schema) -> tuple[Any, ...] | None:
    """`expression` as the scanner's filter tree, over `schema`'s top-level columns; None where
    it holds anything the conversion does not read."""
    try:
        buf = bytes(expression.to_substrait(schema))
        top = _fields(buf)
        functions: dict[int, str] = {}
        for declaration in top.get(2, []):
            d = _fields(declaration)
            if 3 in d:  # extension_function
                fn = _fields(_one(d, 3))
                name = bytes(_one(fn, 3)).decode("utf-8").split(":", 1)[0]
                functions[_scalar(fn, 2)] = name
        referred = _fields(_one(top, 3))
        tree = _expression(_one(referred, 1), functions, list(schema.names))
    except (_Unsupported, ValueError, TypeError, UnicodeDecodeError, struct.error):
        return None
    except Exception:  # noqa: BLE001 - pyarrow's own refusal to serialize (ArrowNotImplemented)
        return None
    if tree[0] in ("column", "literal"):
        return None
    return tuple(tree)

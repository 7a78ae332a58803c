//! Row filters, as pyarrow's `filters` spell them: comparisons of a column with a value, `in`
//! and `not in` a set of values, null tests, and their conjunctions, disjunctions and
//! negations. A filter is evaluated exactly on a batch (`evaluate`), and bounded on a set of
//! rows from what is known of its columns without reading them (`outcomes`): a partition's
//! value, a row group's statistics.
//!
//! The semantics are pyarrow's compute functions', which differ from arrow-rs's kernels in two
//! places handled here: NaN compares false with everything (arrow-rs orders it above every
//! number), and `in` is never null (a null row is in the set only when the set holds a null).

use std::sync::Arc;

use arrow_arith::boolean::{and_kleene, is_not_null, is_null, not, or_kleene};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, Scalar};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType;

use crate::error::{Error, Result};

/// A comparison of a column with one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    /// pyarrow's spellings in `filters`: "=", "==", "!=", "<", "<=", ">", ">=".
    pub fn from_name(name: &str) -> Option<CmpOp> {
        Some(match name {
            "=" | "==" => CmpOp::Eq,
            "!=" => CmpOp::NotEq,
            "<" => CmpOp::Lt,
            "<=" => CmpOp::LtEq,
            ">" => CmpOp::Gt,
            ">=" => CmpOp::GtEq,
            _ => return None,
        })
    }
}

/// A filter on rows.
#[derive(Clone, Debug)]
pub enum Predicate {
    /// `column op value`, `value` an array of one value (a null value matches no row).
    Compare {
        column: String,
        op: CmpOp,
        value: ArrayRef,
    },
    /// `column in values`: true where the row's value is one of `values`, false elsewhere
    /// (a null row is in the set when the set holds a null).
    In {
        column: String,
        values: ArrayRef,
    },
    /// `column is null`.
    IsNull {
        column: String,
    },
    Not(Box<Predicate>),
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
}

impl Predicate {
    /// The columns the filter reads, each once, in the order they first appear.
    pub fn columns(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        self.visit(&mut |p| {
            if let Predicate::Compare { column, .. }
            | Predicate::In { column, .. }
            | Predicate::IsNull { column } = p
            {
                if !out.contains(&column.as_str()) {
                    out.push(column)
                }
            }
        });
        out
    }

    /// The columns compared for equality (`=`, `!=`, `in`), each once: those a bloom filter
    /// can answer for.
    pub fn equality_columns(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        self.visit(&mut |p| {
            let column = match p {
                Predicate::Compare {
                    column,
                    op: CmpOp::Eq | CmpOp::NotEq,
                    ..
                }
                | Predicate::In { column, .. } => column.as_str(),
                _ => return,
            };
            if !out.contains(&column) {
                out.push(column);
            }
        });
        out
    }

    fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Predicate)) {
        f(self);
        match self {
            Predicate::Not(p) => p.visit(f),
            Predicate::And(ps) | Predicate::Or(ps) => ps.iter().for_each(|p| p.visit(f)),
            _ => {}
        }
    }

    /// The filter on every row of `batch`: true, false or null (a null keeps no row).
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        match self {
            Predicate::Compare { column, op, value } => {
                let col = column_of(batch, column)?;
                compare(&col, *op, value).map_err(|e| in_filter(column, e))
            }
            Predicate::In { column, values } => {
                let col = column_of(batch, column)?;
                is_in(&col, values).map_err(|e| in_filter(column, e))
            }
            Predicate::IsNull { column } => Ok(is_null(column_of(batch, column)?.as_ref())?),
            Predicate::Not(p) => Ok(not(&p.evaluate(batch)?)?),
            Predicate::And(ps) => fold(ps, batch, true, |a, b| Ok(and_kleene(a, b)?)),
            Predicate::Or(ps) => fold(ps, batch, false, |a, b| Ok(or_kleene(a, b)?)),
        }
    }

    /// What the filter can be on a set of rows, from what `known` says of their columns
    /// (nothing known of a column: anything).
    pub fn outcomes(&self, known: &dyn Fn(&str) -> Option<ColumnFacts>) -> Outcomes {
        match self {
            Predicate::Compare { column, op, value } => match known(column) {
                Some(facts) => facts.compare(*op, value),
                None => Outcomes::ANY,
            },
            Predicate::In { column, values } => match known(column) {
                Some(facts) => facts.is_in(values),
                None => Outcomes::TRUE.or_else(Outcomes::FALSE),
            },
            Predicate::IsNull { column } => match known(column) {
                Some(facts) => {
                    let mut o = Outcomes::NONE;
                    if facts.may_be_null() {
                        o = o.or_else(Outcomes::TRUE);
                    }
                    if facts.may_be_valid() {
                        o = o.or_else(Outcomes::FALSE);
                    }
                    o
                }
                None => Outcomes::TRUE.or_else(Outcomes::FALSE),
            },
            Predicate::Not(p) => p.outcomes(known).negated(),
            Predicate::And(ps) => ps
                .iter()
                .fold(Outcomes::TRUE, |acc, p| acc.and(p.outcomes(known))),
            Predicate::Or(ps) => ps
                .iter()
                .fold(Outcomes::FALSE, |acc, p| acc.or(p.outcomes(known))),
        }
    }
}

fn fold(
    ps: &[Predicate],
    batch: &RecordBatch,
    empty: bool,
    f: impl Fn(&BooleanArray, &BooleanArray) -> Result<BooleanArray>,
) -> Result<BooleanArray> {
    let mut acc: Option<BooleanArray> = None;
    for p in ps {
        let next = p.evaluate(batch)?;
        acc = Some(match acc {
            None => next,
            Some(a) => f(&a, &next)?,
        });
    }
    Ok(acc.unwrap_or_else(|| BooleanArray::from(vec![empty; batch.num_rows()])))
}

fn in_filter(column: &str, e: Error) -> Error {
    match e {
        Error::Parameter(m) => Error::Parameter(format!("filter on column '{column}': {m}")),
        other => other,
    }
}

fn column_of(batch: &RecordBatch, column: &str) -> Result<ArrayRef> {
    batch
        .column_by_name(column)
        .cloned()
        .ok_or_else(|| Error::Parameter(format!("filter: no column named '{column}'")))
}

/// A dictionary as its values: comparisons are of values, whatever the keys.
fn values_of(col: &ArrayRef) -> Result<ArrayRef> {
    match col.data_type() {
        DataType::Dictionary(_, v) => Ok(arrow_cast::cast(col, v)?),
        _ => Ok(col.clone()),
    }
}

/// `value` as the type of `col`, refused (not turned into a null) when it does not fit.
fn literal_as(value: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    let value = values_of(value)?;
    if value.data_type() == to {
        return Ok(value);
    }
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(&value, to, &options).map_err(|e| {
        Error::Parameter(format!(
            "the value {} ({}) cannot be compared with values of type {to}: {e}",
            display_value(&value),
            value.data_type()
        ))
    })
}

/// Whether `array`'s value `i` is null, logically: a null-typed array holds only nulls, and
/// has no validity buffer to say so (its `is_null` is false).
fn null_at(array: &dyn Array, i: usize) -> bool {
    array.logical_nulls().is_some_and(|n| n.is_null(i))
}

fn display_value(value: &ArrayRef) -> String {
    let options = arrow_cast::display::FormatOptions::default().with_null("null");
    match arrow_cast::display::ArrayFormatter::try_new(value.as_ref(), &options) {
        Ok(f) if !value.is_empty() => format!("{}", f.value(0)),
        _ => "?".into(),
    }
}

fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

/// Where a float array holds NaN (false at nulls and for any other type).
fn nan_mask(array: &dyn Array) -> Option<BooleanArray> {
    let mask = match array.data_type() {
        DataType::Float16 => {
            BooleanArray::from_unary(array.as_primitive::<Float16Type>(), |v| v.is_nan())
        }
        DataType::Float32 => {
            BooleanArray::from_unary(array.as_primitive::<Float32Type>(), |v| v.is_nan())
        }
        DataType::Float64 => {
            BooleanArray::from_unary(array.as_primitive::<Float64Type>(), |v| v.is_nan())
        }
        _ => return None,
    };
    Some(mask)
}

/// Whether an array of one value holds NaN.
pub(super) fn is_nan(one: &ArrayRef) -> bool {
    nan_mask(one.as_ref()).is_some_and(|m| m.is_valid(0) && m.value(0))
}

fn kernel(
    op: CmpOp,
    a: &dyn arrow_array::Datum,
    b: &dyn arrow_array::Datum,
) -> Result<BooleanArray> {
    use arrow_ord::cmp;
    let r = match op {
        CmpOp::Eq => cmp::eq(a, b),
        CmpOp::NotEq => cmp::neq(a, b),
        CmpOp::Lt => cmp::lt(a, b),
        CmpOp::LtEq => cmp::lt_eq(a, b),
        CmpOp::Gt => cmp::gt(a, b),
        CmpOp::GtEq => cmp::gt_eq(a, b),
    };
    r.map_err(|e| Error::Parameter(e.to_string()))
}

/// Whether `converted`, cast back to `original`'s type, is `original`: the cast lost nothing.
fn round_trips(converted: &ArrayRef, original: &ArrayRef) -> bool {
    arrow_cast::cast(converted, original.data_type())
        .is_ok_and(|back| back.as_ref() == original.as_ref())
}

/// Negative zero made positive: 0.0 and -0.0 are equal, and arrow-rs's kernels order them
/// apart (pyarrow's compare them equal).
fn positive_zero(array: ArrayRef) -> ArrayRef {
    match array.data_type() {
        DataType::Float16 => Arc::new(array.as_primitive::<Float16Type>().unary::<_, Float16Type>(
            |v| {
                if v.to_f32() == 0.0 {
                    Default::default()
                } else {
                    v
                }
            },
        )) as ArrayRef,
        DataType::Float32 => Arc::new(
            array
                .as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(|v| if v == 0.0 { 0.0 } else { v }),
        ) as ArrayRef,
        DataType::Float64 => Arc::new(
            array
                .as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(|v| if v == 0.0 { 0.0 } else { v }),
        ) as ArrayRef,
        _ => array,
    }
}

/// The kinds of value pyarrow compares with each other: a value of another kind (a string
/// against integers, a number against booleans) is refused, as pyarrow refuses it.
#[derive(PartialEq, Eq, Debug)]
enum Kind {
    Number,
    Time,
    Text,
    Bool,
    Null,
    Other,
}

fn kind(t: &DataType) -> Kind {
    match t {
        DataType::Null => Kind::Null,
        DataType::Boolean => Kind::Bool,
        t if t.is_numeric() => Kind::Number,
        t if t.is_temporal() => Kind::Time,
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => Kind::Text,
        _ => Kind::Other,
    }
}

/// `col` and `value` in one type that holds both exactly, as pyarrow compares them: the
/// column's, where the value casts to it and back unchanged; else the value's, where the
/// column casts to it (an integer column against a value out of its range, a timestamp
/// against a finer one, a float32 against a float64 it cannot hold); else, for numbers,
/// float64 (a decimal against a finer decimal, an integer against a fraction). The value is
/// never rounded into the column's type. Values of different kinds, and a timestamp with a
/// zone against one without, are refused as pyarrow refuses them. With `zero_equal`, -0.0 is
/// made 0.0 (comparisons; pyarrow's `in` matches them apart).
fn comparable(col: &ArrayRef, value: &ArrayRef, zero_equal: bool) -> Result<(ArrayRef, ArrayRef)> {
    let col = values_of(col)?;
    let value = values_of(value)?;
    let (ct, vt) = (col.data_type().clone(), value.data_type().clone());
    let (ck, vk) = (kind(&ct), kind(&vt));
    let mixed_zones = match (&ct, &vt) {
        (DataType::Timestamp(_, a), DataType::Timestamp(_, b)) => a.is_some() != b.is_some(),
        _ => false,
    };
    if (ck != vk && ck != Kind::Null && vk != Kind::Null) || mixed_zones {
        return Err(Error::Parameter(format!(
            "the value {} ({vt}) cannot be compared with values of type {ct}",
            display_value(&value)
        )));
    }
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    let exact = literal_as(&value, &ct)
        .ok()
        .filter(|lit| round_trips(lit, &value));
    let (col, lit) = if let Some(lit) = exact {
        (col, lit)
    } else if let Ok(widened) = cast_with_options(&col, &vt, &options) {
        (widened, value)
    } else if ck == Kind::Number {
        let f = DataType::Float64;
        match (
            cast_with_options(&col, &f, &options),
            cast_with_options(&value, &f, &options),
        ) {
            (Ok(c), Ok(v)) => (c, v),
            _ => {
                return Err(literal_as(&value, &ct)
                    .err()
                    .unwrap_or_else(|| unfit(&value, &ct)))
            }
        }
    } else {
        return Err(literal_as(&value, &ct)
            .err()
            .unwrap_or_else(|| unfit(&value, &ct)));
    };
    Ok(match zero_equal {
        true => (positive_zero(col), positive_zero(lit)),
        false => (col, lit),
    })
}

fn unfit(value: &ArrayRef, to: &DataType) -> Error {
    Error::Parameter(format!(
        "the value {} ({}) cannot be compared with values of type {to}",
        display_value(value),
        value.data_type()
    ))
}

/// `col op value` on every row, with IEEE semantics for NaN: false for every comparison but
/// `!=`, which is true.
fn compare(col: &ArrayRef, op: CmpOp, value: &ArrayRef) -> Result<BooleanArray> {
    compare_zeros(col, op, value, true)
}

/// `compare`, with -0.0 equal to 0.0 or (for `in`) apart from it.
fn compare_zeros(
    col: &ArrayRef,
    op: CmpOp,
    value: &ArrayRef,
    zero_equal: bool,
) -> Result<BooleanArray> {
    // A comparison with null is null on every row, whatever the column's type: no value is
    // cast to the column's (a null of type Null casts to few), as pyarrow returns no row.
    if value.len() == 1 && null_at(value.as_ref(), 0) {
        return Ok(BooleanArray::new_null(col.len()));
    }
    let (col, lit) = comparable(col, value, zero_equal)?;
    if lit.len() != 1 {
        return Err(Error::Parameter(format!(
            "a comparison takes one value, not {}",
            lit.len()
        )));
    }
    let result = kernel(op, &col, &Scalar::new(lit.clone()))?;
    if !is_float(col.data_type()) {
        return Ok(result);
    }
    let lit_nan = is_nan(&lit);
    // Null where the column is null, so that nulls stay null through AND and OR.
    let nan = match lit_nan {
        true => BooleanArray::new(
            arrow_buffer::BooleanBuffer::new_set(col.len()),
            col.logical_nulls(),
        ),
        false => nan_mask(col.as_ref()).expect("a float column"),
    };
    Ok(match op {
        CmpOp::NotEq => or_kleene(&result, &nan)?,
        _ => and_kleene(&result, &not(&nan)?)?,
    })
}

/// Whether each row's value is one of `values`: never null.
fn is_in(col: &ArrayRef, values: &ArrayRef) -> Result<BooleanArray> {
    let col = values_of(col)?;
    let values = values_of(values)?;
    let mut acc = BooleanArray::from(vec![false; col.len()]);
    for i in 0..values.len() {
        let one = values.slice(i, 1);
        let hit = if null_at(one.as_ref(), 0) {
            is_null(col.as_ref())?
        } else if is_nan(&one) {
            // A set matches NaN with NaN, as pyarrow's is_in does (`=` never does).
            match nan_mask(col.as_ref()) {
                Some(mask) => mask,
                None => compare(&col, CmpOp::Eq, &one)?,
            }
        } else {
            // pyarrow's is_in hashes values: -0.0 is not in a set of 0.0.
            compare_zeros(&col, CmpOp::Eq, &one, false)?
        };
        acc = or_kleene(&acc, &hit)?;
    }
    // A null row compared with a value is null: not in the set, unless a null is.
    let valid = is_not_null(&acc)?;
    Ok(arrow_arith::boolean::and(&acc, &valid).map(|a| {
        let (values, _) = a.into_parts();
        BooleanArray::new(values, None)
    })?)
}

/// The values a filter may take on the rows of a set (a file, a row group): any of true,
/// false and null. A set whose outcomes lack true holds no row the filter keeps; one whose
/// only outcome is true holds only such rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcomes(u8);

impl Outcomes {
    pub const NONE: Outcomes = Outcomes(0);
    pub const TRUE: Outcomes = Outcomes(1);
    pub const FALSE: Outcomes = Outcomes(2);
    pub const NULL: Outcomes = Outcomes(4);
    pub const ANY: Outcomes = Outcomes(7);

    fn has(self, o: Outcomes) -> bool {
        self.0 & o.0 != 0
    }

    fn or_else(self, o: Outcomes) -> Outcomes {
        Outcomes(self.0 | o.0)
    }

    /// Whether some row may be kept.
    pub fn may_keep(self) -> bool {
        self.has(Outcomes::TRUE)
    }

    /// Whether every row is kept.
    pub fn keeps_all(self) -> bool {
        self == Outcomes::TRUE
    }

    fn each(self) -> impl Iterator<Item = Option<bool>> {
        [
            (Outcomes::TRUE, Some(true)),
            (Outcomes::FALSE, Some(false)),
            (Outcomes::NULL, None),
        ]
        .into_iter()
        .filter(move |(o, _)| self.has(*o))
        .map(|(_, v)| v)
    }

    fn of(v: Option<bool>) -> Outcomes {
        match v {
            Some(true) => Outcomes::TRUE,
            Some(false) => Outcomes::FALSE,
            None => Outcomes::NULL,
        }
    }

    fn combine(
        self,
        other: Outcomes,
        f: impl Fn(Option<bool>, Option<bool>) -> Option<bool>,
    ) -> Outcomes {
        let mut out = Outcomes::NONE;
        for a in self.each() {
            for b in other.each() {
                out = out.or_else(Outcomes::of(f(a, b)));
            }
        }
        out
    }

    /// Kleene's AND, row by row (a bound: rows are not paired).
    pub fn and(self, other: Outcomes) -> Outcomes {
        self.combine(other, |a, b| match (a, b) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        })
    }

    /// Kleene's OR.
    pub fn or(self, other: Outcomes) -> Outcomes {
        self.combine(other, |a, b| match (a, b) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        })
    }

    pub fn negated(self) -> Outcomes {
        let mut out = Outcomes::NONE;
        for v in self.each() {
            out = out.or_else(Outcomes::of(v.map(|b| !b)));
        }
        out
    }
}

/// A set that answers whether it may hold a value: a bloom filter. False means certainly not.
pub trait MayContain: Send + Sync + std::fmt::Debug {
    /// Whether the set may hold `value` (an array of one value, of any type that casts to the
    /// column's; true whenever that cannot be told).
    fn may_contain(&self, value: &ArrayRef) -> bool;
}

/// What is known of a column over a set of rows without reading it: bounds of its values (a
/// row group's statistics; a partition's one value is both), how many are null, and a set of
/// its values (a bloom filter).
#[derive(Clone, Debug)]
pub struct ColumnFacts {
    /// A lower bound of the non-null values (an array of one value), if known.
    pub min: Option<ArrayRef>,
    /// An upper bound of the non-null values, if known.
    pub max: Option<ArrayRef>,
    /// How many rows are null, if known.
    pub null_count: Option<u64>,
    pub rows: u64,
    /// A set every non-null value is in, if known.
    pub values: Option<std::sync::Arc<dyn MayContain>>,
}

impl ColumnFacts {
    /// A partition's value: every row holds `value` (an array of one value, maybe null).
    pub fn constant(value: ArrayRef, rows: u64) -> ColumnFacts {
        let null = null_at(value.as_ref(), 0);
        ColumnFacts {
            min: (!null).then(|| value.clone()),
            max: (!null).then_some(value),
            null_count: Some(if null { rows } else { 0 }),
            rows,
            values: None,
        }
    }

    fn may_be_null(&self) -> bool {
        self.null_count.is_none_or(|n| n > 0)
    }

    fn may_be_valid(&self) -> bool {
        self.null_count.is_none_or(|n| n < self.rows)
    }

    /// `bound op value` on one value each, or None when it cannot be told (types that do not
    /// compare, a value that does not fit the bound's type).
    fn test(bound: &ArrayRef, op: CmpOp, value: &ArrayRef) -> Option<bool> {
        let (bound, value) = comparable(bound, value, true).ok()?;
        let r = kernel(op, &bound, &Scalar::new(value)).ok()?;
        (r.len() == 1 && r.is_valid(0)).then(|| r.value(0))
    }

    fn compare(&self, op: CmpOp, value: &ArrayRef) -> Outcomes {
        let mut out = Outcomes::NONE;
        if self.may_be_null() || null_at(value.as_ref(), 0) {
            out = out.or_else(Outcomes::NULL);
        }
        if !self.may_be_valid() || null_at(value.as_ref(), 0) {
            return out;
        }
        let (Some(min), Some(max)) = (&self.min, &self.max) else {
            return out.or_else(Outcomes::TRUE).or_else(Outcomes::FALSE);
        };
        let float = values_of(min).is_ok_and(|m| is_float(m.data_type()));
        let value_nan = is_nan(value);
        if value_nan {
            // NaN compares false with everything, and is unequal to everything.
            return out.or_else(if op == CmpOp::NotEq {
                Outcomes::TRUE
            } else {
                Outcomes::FALSE
            });
        }
        let t = |bound: &ArrayRef, op: CmpOp| Self::test(bound, op, value);
        // Statistics leave NaN out: a float set may hold NaN, which makes every comparison
        // false but `!=` (true).
        let single = t(min, CmpOp::Eq) == Some(true) && t(max, CmpOp::Eq) == Some(true);
        let (may_true, may_false) = match op {
            CmpOp::Eq => (
                t(min, CmpOp::LtEq) != Some(false) && t(max, CmpOp::GtEq) != Some(false),
                !single || float,
            ),
            CmpOp::NotEq => (
                !single || float,
                t(min, CmpOp::LtEq) != Some(false) && t(max, CmpOp::GtEq) != Some(false),
            ),
            CmpOp::Lt => (
                t(min, CmpOp::Lt) != Some(false),
                t(max, CmpOp::GtEq) != Some(false) || float,
            ),
            CmpOp::LtEq => (
                t(min, CmpOp::LtEq) != Some(false),
                t(max, CmpOp::Gt) != Some(false) || float,
            ),
            CmpOp::Gt => (
                t(max, CmpOp::Gt) != Some(false),
                t(min, CmpOp::LtEq) != Some(false) || float,
            ),
            CmpOp::GtEq => (
                t(max, CmpOp::GtEq) != Some(false),
                t(min, CmpOp::Lt) != Some(false) || float,
            ),
        };
        // A value the set certainly lacks equals no row (never said of floats: 0.0 equals
        // -0.0, which hash apart).
        let absent = !float
            && matches!(op, CmpOp::Eq | CmpOp::NotEq)
            && self.values.as_ref().is_some_and(|v| !v.may_contain(value));
        let (may_true, may_false) = match (absent, op) {
            (true, CmpOp::Eq) => (false, may_false),
            (true, _) => (may_true, false),
            (false, _) => (may_true, may_false),
        };
        if may_true {
            out = out.or_else(Outcomes::TRUE);
        }
        if may_false {
            out = out.or_else(Outcomes::FALSE);
        }
        out
    }

    fn is_in(&self, values: &ArrayRef) -> Outcomes {
        let mut out = Outcomes::NONE;
        if self.may_be_null() {
            // A null row is in the set only when the set holds a null.
            out = out.or_else(if values.null_count() > 0 {
                Outcomes::TRUE
            } else {
                Outcomes::FALSE
            });
        }
        if !self.may_be_valid() {
            return out;
        }
        // A non-null row may be in the set if it may equal one of its values, and may be out
        // of it unless every non-null row equals one of them.
        let (mut may_true, mut may_false) = (false, true);
        for i in (0..values.len()).filter(|&i| values.is_valid(i)) {
            let one = values.slice(i, 1);
            if is_nan(&one) {
                // Statistics leave NaN out: any float set may hold one.
                may_true = true;
                continue;
            }
            let eq = self.compare(CmpOp::Eq, &one);
            may_true |= eq.has(Outcomes::TRUE);
            may_false &= eq.has(Outcomes::FALSE);
        }
        if may_true {
            out = out.or_else(Outcomes::TRUE);
        }
        if may_false {
            out = out.or_else(Outcomes::FALSE);
        }
        out
    }
}

/// A column of `rows` copies of `value` (an array of one value): a partition column.
pub fn repeated(value: &ArrayRef, rows: usize) -> Result<ArrayRef> {
    let indices = arrow_array::UInt32Array::from(vec![0u32; rows]);
    Ok(arrow_select::take::take(value.as_ref(), &indices, None)?)
}

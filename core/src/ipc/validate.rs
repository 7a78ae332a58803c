//! Full validation of decoded arrays before anything reads their values, as arrow-data's
//! `validate_full` does it, with one change: the offsets of strings, binaries and lists (every
//! offset in bounds, non-decreasing, and for strings on a character boundary) are checked by
//! a tight loop. arrow-data walks them through a chain of iterator adaptors, a tenth of the
//! time of a large read. The loop only says yes or "look closer"; on "look closer"
//! arrow-data's own check runs and names the problem, so errors read the same.

use arrow_array::RecordBatch;
use arrow_array::{Array, RecordBatchOptions};
use arrow_data::ArrayData;
use arrow_schema::{ArrowError, DataType};

use crate::error::{catch_panics, Error, Result};
use crate::parallel::for_each_parallel;

/// `batch` after validating every column in full on up to `threads` threads (largest first),
/// and the batch itself (column lengths and types against its schema and row count). This
/// covers what arrow-ipc's validating decode checks for memory safety; it is more lenient in
/// places that are not (a struct child longer than its parent is accepted, as arrow-data does).
pub(crate) fn validate_columns(batch: RecordBatch, threads: usize) -> Result<RecordBatch> {
    let schema = batch.schema();
    for_each_parallel(
        batch.columns(),
        threads,
        None,
        |column| column.get_buffer_memory_size(),
        || Ok(()),
        |_, i, column| {
            let name = schema.field(i).name();
            // On the helper threads too, a panic (arrow-data asserts some lengths) is an error.
            catch_panics(&format!("validating column {i} ('{name}')"), || {
                validate_full(&column.to_data())
                    .map_err(|e| Error::from(e).at(format_args!("column {i} ('{name}')")))
            })
        },
    )?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    let (schema, columns, _) = batch.into_parts();
    Ok(RecordBatch::try_new_with_options(
        schema, columns, &options,
    )?)
}

/// Validates `data` and its children in full: layout, nulls and values. A dictionary's
/// values are the exception: checked for layout only, as arrow-ipc does, because the reader
/// validated them in full when the dictionary arrived (re-checking them with every batch
/// would cost the whole dictionary per batch).
pub fn validate_full(data: &ArrayData) -> Result<(), ArrowError> {
    data.validate()?;
    if let Err(e) = data.validate_nulls() {
        // Its last check, a null in a child declared non-nullable, is not refused: it is no
        // matter of memory safety, arrow-data looks at the immediate parent only (so a null
        // under a null grandparent fails it), and pyarrow writes and reads such data.
        if !is_nullability(&e) {
            return Err(e);
        }
    }
    if !offsets_valid(data) {
        data.validate_values()?;
    }
    if matches!(data.data_type(), DataType::Dictionary(..)) {
        return Ok(());
    }
    for (i, child) in data.child_data().iter().enumerate() {
        validate_full(child).map_err(|e| {
            ArrowError::InvalidArgumentError(format!(
                "{} child #{i} invalid: {e}",
                data.data_type()
            ))
        })?;
    }
    Ok(())
}

/// Whether arrow-data's `validate_nulls` failed on a non-nullable child's nulls (the check it
/// makes after the null count's).
fn is_nullability(e: &ArrowError) -> bool {
    matches!(e, ArrowError::InvalidArgumentError(m) if m.starts_with("non-nullable child"))
}

/// True when `data` is a type whose values check is its offsets, and they pass it. False
/// means "not checked here" (another type) or "failed": arrow-data decides.
fn offsets_valid(data: &ArrayData) -> bool {
    let values = || data.buffers().get(1).map(|b| b.as_slice());
    let child_len = || data.child_data().first().map(|c| c.len());
    match data.data_type() {
        DataType::Utf8 => values().is_some_and(|v| utf8_offsets::<i32>(data, v)),
        DataType::LargeUtf8 => values().is_some_and(|v| utf8_offsets::<i64>(data, v)),
        DataType::Binary => values().is_some_and(|v| offsets_within::<i32>(data, v.len())),
        DataType::LargeBinary => values().is_some_and(|v| offsets_within::<i64>(data, v.len())),
        DataType::List(_) | DataType::Map(..) => {
            child_len().is_some_and(|n| offsets_within::<i32>(data, n))
        }
        DataType::LargeList(_) => child_len().is_some_and(|n| offsets_within::<i64>(data, n)),
        _ => false,
    }
}

/// An offset type of the Arrow format.
/// (Plain integers: any bit pattern is a value, so a byte buffer can be viewed as them.)
trait Offset: Copy {
    fn widen(self) -> i64;
}

impl Offset for i32 {
    fn widen(self) -> i64 {
        self.into()
    }
}

impl Offset for i64 {
    fn widen(self) -> i64 {
        self
    }
}

/// The `len + 1` offsets of `data` (after its own offset), if the buffer holds them.
fn offsets<T: Offset>(data: &ArrayData) -> Option<&[T]> {
    let buffer = data.buffers().first()?;
    if data.is_empty() && buffer.is_empty() {
        return Some(&[]);
    }
    let start = data.offset();
    let end = start.checked_add(data.len())?.checked_add(1)?;
    // SAFETY: any bit pattern is a valid i32 or i64; align_to only takes the aligned middle.
    let (prefix, all, _) = unsafe { buffer.as_slice().align_to::<T>() };
    if !prefix.is_empty() {
        return None;
    }
    all.get(start..end)
}

/// Every offset is at least the one before it, the first is non-negative and the last at most
/// `limit`.
fn offsets_within<T: Offset>(data: &ArrayData, limit: usize) -> bool {
    let Some(offsets) = offsets::<T>(data) else {
        return false;
    };
    monotonic_within(offsets, limit)
}

fn monotonic_within<T: Offset>(offsets: &[T], limit: usize) -> bool {
    let (Some(first), Some(last)) = (offsets.first(), offsets.last()) else {
        return true;
    };
    let Ok(limit) = i64::try_from(limit) else {
        return false;
    };
    // No early exit: the loop compiles to straight-line comparisons over the buffer.
    let decreasing = offsets
        .windows(2)
        .fold(false, |bad, w| bad | (w[1].widen() < w[0].widen()));
    !decreasing && first.widen() >= 0 && last.widen() <= limit
}

/// As [`offsets_within`] the values' length, the values are UTF-8 (all of them, as arrow-data
/// requires), and every offset falls on a character boundary.
fn utf8_offsets<T: Offset>(data: &ArrayData, values: &[u8]) -> bool {
    let Some(offsets) = offsets::<T>(data) else {
        return false;
    };
    if !monotonic_within(offsets, values.len()) || std::str::from_utf8(values).is_err() {
        return false;
    }
    // Offsets are now within 0..=len. A character boundary is the end, or a byte that is
    // not a continuation byte (0b10xx_xxxx, below -64 as i8).
    let splits_a_character = offsets.iter().fold(false, |bad, &o| {
        bad | values
            .get(o.widen() as usize)
            .is_some_and(|&b| (b as i8) < -64)
    });
    !splits_a_character
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, BinaryArray, LargeStringArray, ListArray, StringArray, StructArray};
    use arrow_buffer::Buffer;
    use arrow_schema::Field;

    use super::*;

    fn with_buffers(array: &dyn Array, offsets: Buffer, values: Option<Buffer>) -> ArrayData {
        let data = array.to_data();
        let mut buffers = vec![offsets];
        buffers.extend(values);
        let builder = data.into_builder().buffers(buffers);
        // SAFETY: only validated below, never read.
        unsafe { builder.build_unchecked() }
    }

    /// A one-string Utf8 array whose bytes are not UTF-8.
    fn invalid_utf8() -> ArrayData {
        with_buffers(
            &StringArray::from(vec!["ab"]),
            Buffer::from_slice_ref([0i32, 2]),
            Some(Buffer::from(&b"\xff\xfe"[..])),
        )
    }

    fn both(data: &ArrayData) -> (Result<(), String>, Result<(), String>) {
        (
            validate_full(data).map_err(|e| e.to_string()),
            data.validate_full().map_err(|e| e.to_string()),
        )
    }

    #[test]
    fn valid_arrays_pass() {
        let strings = StringArray::from(vec![Some("a"), None, Some("héllo"), Some("")]);
        assert!(validate_full(&strings.to_data()).is_ok());
        assert!(validate_full(&strings.slice(1, 2).to_data()).is_ok());
        let large = LargeStringArray::from(vec!["x", "yz"]);
        assert!(validate_full(&large.to_data()).is_ok());
        let binary = BinaryArray::from(vec![&b"\xff"[..], b""]);
        assert!(validate_full(&binary.to_data()).is_ok());
        let list = ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(vec![
            Some(vec![Some(1), None]),
            None,
            Some(vec![]),
        ]);
        assert!(validate_full(&list.to_data()).is_ok());
        assert!(validate_full(&StringArray::from(Vec::<&str>::new()).to_data()).is_ok());
    }

    #[test]
    fn each_broken_invariant_fails_with_arrow_datas_message() {
        let base = StringArray::from(vec!["ab", "cd", "é"]);
        let values = Buffer::from(&b"abcd\xc3\xa9"[..]);
        let cases = [
            // decreasing
            (Buffer::from_slice_ref([0i32, 2, 1, 6]), values.clone()),
            // past the end
            (Buffer::from_slice_ref([0i32, 2, 4, 7]), values.clone()),
            // negative first
            (Buffer::from_slice_ref([-1i32, 2, 4, 6]), values.clone()),
            // inside a two-byte character
            (Buffer::from_slice_ref([0i32, 2, 5, 6]), values.clone()),
            // not UTF-8 at all
            (
                Buffer::from_slice_ref([0i32, 2, 4, 6]),
                Buffer::from(&b"abcd\xff\xfe"[..]),
            ),
        ];
        for (i, (offsets, values)) in cases.into_iter().enumerate() {
            let data = with_buffers(&base, offsets, Some(values));
            let (ours, arrows) = both(&data);
            assert!(ours.is_err(), "case {i}: accepted");
            assert_eq!(ours, arrows, "case {i}");
        }
    }

    #[test]
    fn dictionary_values_are_trusted_keys_are_checked() {
        use arrow_array::Int8Array;
        // Values that fail validation: the reader validated a dictionary in full when it
        // arrived, so a batch checks only its keys against them (as arrow-ipc does).
        let values = invalid_utf8();
        let keys = Int8Array::from(vec![0i8, 0]);
        let dictionary = |keys: &Int8Array| unsafe {
            keys.to_data()
                .into_builder()
                .data_type(DataType::Dictionary(
                    Box::new(DataType::Int8),
                    Box::new(DataType::Utf8),
                ))
                .child_data(vec![values.clone()])
                .build_unchecked()
        };
        assert!(validate_full(&dictionary(&keys)).is_ok());
        assert!(dictionary(&keys).validate_full().is_err());
        let (ours, arrows) = both(&dictionary(&Int8Array::from(vec![0i8, 1])));
        assert!(ours.is_err());
        assert_eq!(ours, arrows);
    }

    #[test]
    fn list_offsets_are_checked_against_the_child() {
        let list = ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(3)]),
        ]);
        let data = with_buffers(&list, Buffer::from_slice_ref([0i32, 2, 4]), None);
        let (ours, arrows) = both(&data);
        assert!(ours.is_err());
        assert_eq!(ours, arrows);
    }

    #[test]
    fn children_are_validated_and_named() {
        let bad = invalid_utf8();
        let field = Arc::new(Field::new("s", DataType::Utf8, false));
        let parent = StructArray::from(vec![(field, arrow_array::make_array(bad))]);
        let (ours, arrows) = both(&parent.to_data());
        assert!(
            ours.as_ref().is_err_and(|e| e.contains("child #0")),
            "{ours:?}"
        );
        assert_eq!(ours, arrows);
    }

    proptest::proptest! {
        /// On any offsets and bytes, the result (and the message) is arrow-data's.
        #[test]
        fn agrees_with_arrow_data(
            offsets in proptest::collection::vec(-2i32..12, 1..8),
            pieces in proptest::collection::vec(0usize..5, 0..6),
            stray in proptest::prelude::any::<u8>(),
            slice in 0usize..3,
        ) {
            // Mostly UTF-8 with multi-byte characters (so offsets fall inside them), sometimes
            // a stray byte.
            let bytes: Vec<u8> = pieces
                .iter()
                .flat_map(|&p| match p {
                    0 => b"a".to_vec(),
                    1 => "\u{e9}".as_bytes().to_vec(),
                    2 => "\u{20ac}".as_bytes().to_vec(),
                    3 => "\u{bfff}".as_bytes().to_vec(),
                    _ => vec![stray],
                })
                .collect();
            let n = offsets.len() - 1;
            let offsets_buffer = Buffer::from_slice_ref(&offsets);
            let values = Buffer::from(bytes.clone());
            for dt in [DataType::Utf8, DataType::Binary] {
                let data = unsafe {
                    ArrayData::builder(dt.clone())
                        .len(n.saturating_sub(slice))
                        .offset(slice.min(n))
                        .buffers(vec![offsets_buffer.clone(), values.clone()])
                        .build_unchecked()
                };
                let (ours, arrows) = both(&data);
                proptest::prop_assert_eq!(ours, arrows, "{:?}", dt);
            }
            let child = arrow_array::Int8Array::from(vec![0i8; bytes.len()]).to_data();
            let item = Arc::new(Field::new("item", DataType::Int8, true));
            let list = unsafe {
                ArrayData::builder(DataType::List(item))
                    .len(n)
                    .buffers(vec![offsets_buffer.clone()])
                    .child_data(vec![child])
                    .build_unchecked()
            };
            let (ours, arrows) = both(&list);
            proptest::prop_assert_eq!(ours, arrows);
        }
    }
}

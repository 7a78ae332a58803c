//! A structural check of a Parquet footer before the parquet crate parses it. The footer is
//! Thrift (compact protocol); the crate reserves a list's declared length before reading its
//! elements, so a footer of a few bytes declaring two billion row groups would make it ask for
//! hundreds of gigabytes, and allocation failure aborts the process. This walk reads nothing
//! into memory: it checks that every declared length fits the bytes that remain (an element
//! takes at least one), and that nesting stays shallow, and leaves the meaning to the crate.
//! The walk is `thrift`'s, shared with the page headers.

use super::thrift::{CompactReader, STRUCT};
use crate::error::{Error, Result};

/// Checks `footer`'s Thrift structure (a FileMetaData struct).
pub(crate) fn check_footer(footer: &[u8]) -> Result<()> {
    check_struct(footer, "footer")
}

/// Checks that `bytes` start with one Thrift struct of sound structure: a page index's column
/// or offset index, which the crate decodes as it decodes the footer.
pub(crate) fn check_struct(bytes: &[u8], what: &str) -> Result<()> {
    CompactReader::new(bytes)
        .skip(STRUCT, 0)
        .map_err(|why| Error::Parquet(format!("corrupt Parquet {what}: {why}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_declared_list_is_refused_before_the_crate_sees_it() {
        // version = 1, schema = [root], num_rows = 0, row_groups: 2^31 - 1 structs, then nothing.
        let mut footer = vec![0x15, 0x02, 0x19, 0x1c, 0x48, 4];
        footer.extend_from_slice(b"root");
        footer.extend_from_slice(&[0x15, 0x00, 0x00, 0x16, 0x00, 0x19, 0xfc]);
        footer.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x07]);
        let err = check_footer(&footer).unwrap_err().to_string();
        assert!(err.contains("2147483647 elements"), "{err}");
        // Deep nesting and a string longer than the footer.
        let deep = [0x1c].repeat(100);
        assert!(check_footer(&deep)
            .unwrap_err()
            .to_string()
            .contains("deeper"));
        let long = [0x18, 0xff, 0x7f, b'x'];
        assert!(check_footer(&long).is_err());
        // A well-formed struct passes.
        assert!(check_footer(&[0x15, 0x02, 0x18, 0x01, b'a', 0x00]).is_ok());
    }
}

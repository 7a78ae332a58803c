//! A structural check of a Parquet footer before the parquet crate parses it. The footer is
//! Thrift (compact protocol); the crate reserves a list's declared length before reading its
//! elements, so a footer of a few bytes declaring two billion row groups would make it ask for
//! hundreds of gigabytes, and allocation failure aborts the process. This walk reads nothing
//! into memory: it checks that every declared length fits the bytes that remain (an element
//! takes at least one), and that nesting stays shallow, and leaves the meaning to the crate.

use crate::error::{Error, Result};

/// Deeper than any Parquet footer nests (the schema is a flat list); deeper means hostile.
const MAX_DEPTH: usize = 64;

/// Checks `footer`'s Thrift structure (a FileMetaData struct).
pub(crate) fn check_footer(footer: &[u8]) -> Result<()> {
    check_struct(footer, "footer")
}

/// Checks that `bytes` start with one Thrift struct of sound structure: a page index's column
/// or offset index, which the crate decodes as it decodes the footer.
pub(crate) fn check_struct(bytes: &[u8], what: &str) -> Result<()> {
    let mut walk = Walk { bytes, at: 0 };
    walk.structure(0)
        .map_err(|why| Error::Parquet(format!("corrupt Parquet {what}: {why}")))
}

struct Walk<'a> {
    bytes: &'a [u8],
    at: usize,
}

type Step = std::result::Result<(), String>;

impl Walk<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn byte(&mut self) -> std::result::Result<u8, String> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| format!("it ends at byte {} inside a value", self.at))?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> std::result::Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift.min(63);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("a varint at byte {} runs past 10 bytes", self.at))
    }

    fn skip(&mut self, n: u64, what: &str) -> Step {
        if n > self.remaining() as u64 {
            return Err(format!(
                "{what} declares {n} bytes and {} remain",
                self.remaining()
            ));
        }
        self.at += n as usize;
        Ok(())
    }

    /// A count of elements, each at least one byte.
    fn count(&mut self, n: u64, what: &str) -> std::result::Result<u64, String> {
        if n > self.remaining() as u64 {
            return Err(format!(
                "{what} declares {n} elements and {} bytes remain",
                self.remaining()
            ));
        }
        Ok(n)
    }

    fn structure(&mut self, depth: usize) -> Step {
        if depth > MAX_DEPTH {
            return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        loop {
            let header = self.byte()?;
            if header == 0 {
                return Ok(());
            }
            if header >> 4 == 0 {
                // The field id follows as a zigzag varint.
                self.varint()?;
            }
            match header & 0x0f {
                // Booleans carry their value in the header.
                1 | 2 => {}
                t => self.value(t, depth + 1)?,
            }
        }
    }

    fn value(&mut self, kind: u8, depth: usize) -> Step {
        match kind {
            // A boolean inside a list or map takes a byte of its own.
            1..=3 => self.skip(1, "a byte"),
            4..=6 => self.varint().map(drop),
            7 => self.skip(8, "a double"),
            8 => {
                let n = self.varint()?;
                self.skip(n, "a string")
            }
            9 | 10 => {
                let header = self.byte()?;
                let size = match header >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                let size = self.count(size, "a list")?;
                for _ in 0..size {
                    self.value(header & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            11 => {
                let size = self.varint()?;
                if size == 0 {
                    return Ok(());
                }
                let size = self.count(size, "a map")?;
                let kinds = self.byte()?;
                for _ in 0..size {
                    self.value(kinds >> 4, depth + 1)?;
                    self.value(kinds & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            12 => self.structure(depth),
            other => Err(format!("unknown Thrift type {other} at byte {}", self.at)),
        }
    }
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

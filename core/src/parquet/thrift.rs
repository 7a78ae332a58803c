//! The one Thrift compact-protocol reader of the Parquet code: the footer's structural check
//! (`footer`), the page header fields the decompression stage reads and the bloom filter
//! header (`page_header`). Each is a parser of hostile input, so varints, zigzag, field
//! headers and skipping are written once here, with one depth limit and one rule for
//! declared counts: every element takes at least a byte, so a count beyond the bytes that
//! remain is refused before it is looped over. Errors say why, and the caller says what
//! was being read.

/// Thrift compact types.
pub(crate) const BOOLEAN_TRUE: u8 = 1;
pub(crate) const BOOLEAN_FALSE: u8 = 2;
pub(crate) const BYTE: u8 = 3;
pub(crate) const I16: u8 = 4;
pub(crate) const I32: u8 = 5;
pub(crate) const I64: u8 = 6;
pub(crate) const DOUBLE: u8 = 7;
pub(crate) const BINARY: u8 = 8;
pub(crate) const LIST: u8 = 9;
pub(crate) const SET: u8 = 10;
pub(crate) const MAP: u8 = 11;
pub(crate) const STRUCT: u8 = 12;

/// Deeper than any Parquet structure nests (the schema is a flat list); deeper is hostile.
pub(crate) const MAX_DEPTH: usize = 64;

/// Why a structure could not be read.
pub(crate) type Why = String;

/// A reader of compact-protocol values from `buf`, at `at`.
pub(crate) struct CompactReader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> CompactReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        CompactReader { buf, at: 0 }
    }

    /// Where the next byte is read: after a whole struct, its length.
    pub fn position(&self) -> usize {
        self.at
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    pub fn byte(&mut self) -> Result<u8, Why> {
        let b = *self
            .buf
            .get(self.at)
            .ok_or_else(|| format!("it ends at byte {} inside a value", self.at))?;
        self.at += 1;
        Ok(b)
    }

    fn advance(&mut self, n: u64, what: &str) -> Result<(), Why> {
        if n > self.remaining() as u64 {
            return Err(format!(
                "{what} declares {n} bytes and {} remain",
                self.remaining()
            ));
        }
        self.at += n as usize;
        Ok(())
    }

    pub fn varint(&mut self) -> Result<u64, Why> {
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

    pub fn zigzag(&mut self) -> Result<i64, Why> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// The next field's id and type, `last` being the previous field's id; None at the end of
    /// the struct.
    pub fn field(&mut self, last: &mut i16) -> Result<Option<(i16, u8)>, Why> {
        let b = self.byte()?;
        if b == 0 {
            return Ok(None);
        }
        let (delta, kind) = (b >> 4, b & 0x0f);
        let id = if delta == 0 {
            i16::try_from(self.zigzag()?).map_err(|_| "a field id is out of range".to_string())?
        } else {
            last.checked_add(i16::from(delta))
                .ok_or_else(|| "a field id is out of range".to_string())?
        };
        *last = id;
        Ok(Some((id, kind)))
    }

    /// Skips one value of type `kind`, a struct's field (a boolean field holds its value in
    /// its header), `depth` levels down.
    pub fn skip(&mut self, kind: u8, depth: usize) -> Result<(), Why> {
        if depth > MAX_DEPTH {
            return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        match kind {
            BOOLEAN_TRUE | BOOLEAN_FALSE => Ok(()),
            BYTE => self.advance(1, "a byte"),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.advance(8, "a double"),
            BINARY => {
                let n = self.varint()?;
                self.advance(n, "a string")
            }
            LIST | SET => {
                let head = self.byte()?;
                let n = match head >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                let n = self.count(n, "a list")?;
                for _ in 0..n {
                    self.skip_element(head & 0x0f, depth)?;
                }
                Ok(())
            }
            MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let n = self.count(n, "a map")?;
                let kinds = self.byte()?;
                for _ in 0..n {
                    self.skip_element(kinds >> 4, depth)?;
                    self.skip_element(kinds & 0x0f, depth)?;
                }
                Ok(())
            }
            STRUCT => {
                let mut last = 0;
                while let Some((_, kind)) = self.field(&mut last)? {
                    self.skip(kind, depth + 1)?;
                }
                Ok(())
            }
            other => Err(format!("unknown Thrift type {other} at byte {}", self.at)),
        }
    }

    /// A list's or a map's element: a boolean takes a byte of its own there.
    fn skip_element(&mut self, kind: u8, depth: usize) -> Result<(), Why> {
        match kind {
            BOOLEAN_TRUE | BOOLEAN_FALSE => self.advance(1, "a boolean"),
            other => self.skip(other, depth + 1),
        }
    }

    /// A declared count of elements, each at least one byte.
    fn count(&mut self, n: u64, what: &str) -> Result<u64, Why> {
        if n > self.remaining() as u64 {
            return Err(format!(
                "{what} declares {n} elements and {} bytes remain",
                self.remaining()
            ));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator: the same inputs on every run.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn arbitrary_and_mutated_bytes_end_in_a_value_or_an_error() {
        // A struct of every type, nested.
        let valid: Vec<u8> = vec![
            0x15, 0x04, // i32 1 = 2
            0x18, 0x02, b'a', b'b', // binary 2 = "ab"
            0x19, 0x35, 0x02, 0x04, 0x06, // list<i32> 3 = [1, 2, 3]
            0x1c, 0x11, 0x00, // struct 4 = {bool 1 = true}
            0x1b, 0x01, 0x55, 0x02, 0x04, // map<i32, i32> 5 = {1: 2}
            0x17, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, // double 6 = 1.0
            0x00,
        ];
        let mut r = CompactReader::new(&valid);
        r.skip(STRUCT, 0).unwrap();
        assert_eq!(r.position(), valid.len());
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..20_000 {
            let mut input = valid.clone();
            if round % 2 == 0 {
                let n = (next(&mut state) % 4 + 1) as usize;
                for _ in 0..n {
                    let at = (next(&mut state) as usize) % input.len();
                    input[at] = next(&mut state) as u8;
                }
                input.truncate((next(&mut state) as usize) % (input.len() + 1));
            } else {
                let len = (next(&mut state) % 64) as usize;
                input = (0..len).map(|_| next(&mut state) as u8).collect();
            }
            let mut r = CompactReader::new(&input);
            if r.skip(STRUCT, 0).is_ok() {
                assert!(r.position() <= input.len());
            }
        }
    }

    #[test]
    fn declared_counts_beyond_the_bytes_and_deep_nesting_are_refused() {
        let huge = [0x19, 0xf5, 0xff, 0xff, 0xff, 0xff, 0x07];
        let err = CompactReader::new(&huge).skip(STRUCT, 0).unwrap_err();
        assert!(err.contains("2147483647 elements"), "{err}");
        let deep = [0x1c].repeat(100);
        let err = CompactReader::new(&deep).skip(STRUCT, 0).unwrap_err();
        assert!(err.contains("deeper"), "{err}");
        let bools = [0x19, 0xf1, 0x80, 0x01];
        assert!(CompactReader::new(&bools).skip(STRUCT, 0).is_err());
    }
}

//! Helpers shared by the fuzz targets in `fuzz_targets/`: a byte-driven choice source and a
//! RESP2 reply checker.
//!
//! libFuzzer hands each target one byte string. Targets that need choices besides their
//! payload (where to split the input, how much output to drain) take them from a [`Choices`]
//! over a prefix of that string, so every choice is part of the input: a crash replays from
//! its file alone, and the fuzzer's mutations reach the choices too.

/// Choices taken one by one from a byte string; past its end every choice is the smallest.
pub struct Choices<'a> {
    bytes: &'a [u8],
}

impl<'a> Choices<'a> {
    /// Choices from `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Choices { bytes }
    }

    /// The next byte, or 0 once they are used up.
    pub fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    /// A number in `lo..=hi` (`lo <= hi`), from one byte.
    pub fn in_range(&mut self, lo: usize, hi: usize) -> usize {
        lo + usize::from(self.byte()) % (hi - lo + 1)
    }
}

/// Splits `input` at its first `n` bytes (fewer if it is shorter): the choice prefix and the
/// payload.
pub fn split_prefix(input: &[u8], n: usize) -> (&[u8], &[u8]) {
    input.split_at(n.min(input.len()))
}

/// Why a byte string is not a sequence of RESP2 replies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RespError {
    /// The bytes end inside a reply.
    Incomplete,
    /// A reply starts with an unknown type byte, at this offset.
    BadType(usize),
    /// A line (simple string, error, integer or length) is malformed, at this offset.
    BadLine(usize),
}

/// Checks that `bytes` is a whole number of well-formed RESP2 replies (simple strings, errors,
/// integers, bulk strings, arrays, and the null bulk string and array), returning how many.
pub fn check_replies(bytes: &[u8]) -> Result<usize, RespError> {
    let mut at = 0;
    let mut count = 0;
    while at < bytes.len() {
        at = reply(bytes, at)?;
        count += 1;
    }
    Ok(count)
}

/// The line at `at` (without its CRLF) and the offset after it; a line holds no CR or LF.
fn line(bytes: &[u8], at: usize) -> Result<(&[u8], usize), RespError> {
    let rest = &bytes[at..];
    let end = rest
        .iter()
        .position(|&b| b == b'\n')
        .ok_or(RespError::Incomplete)?;
    if end == 0 || rest[end - 1] != b'\r' || rest[..end - 1].contains(&b'\r') {
        return Err(RespError::BadLine(at));
    }
    Ok((&rest[..end - 1], at + end + 1))
}

/// A decimal integer as RESP writes it: an optional `-`, then digits without leading zeros.
fn integer(text: &[u8], at: usize) -> Result<i64, RespError> {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.iter().all(u8::is_ascii_digit)
        && (digits == b"0" || digits[0] != b'0')
        && !(text.len() > digits.len() && digits == b"0");
    if !canonical {
        return Err(RespError::BadLine(at));
    }
    core::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(RespError::BadLine(at))
}

/// One reply starting at `at`; the offset after it.
fn reply(bytes: &[u8], at: usize) -> Result<usize, RespError> {
    let kind = bytes[at];
    let (text, next) = line(bytes, at + 1)?;
    match kind {
        b'+' | b'-' => Ok(next),
        b':' => integer(text, at).map(|_| next),
        b'$' => match integer(text, at)? {
            -1 => Ok(next),
            n if n >= 0 => {
                let end = next + n as usize;
                match bytes.get(end..end + 2) {
                    Some(b"\r\n") => Ok(end + 2),
                    Some(_) => Err(RespError::BadLine(end)),
                    None => Err(RespError::Incomplete),
                }
            }
            _ => Err(RespError::BadLine(at)),
        },
        b'*' => match integer(text, at)? {
            -1 => Ok(next),
            n if n >= 0 => {
                let mut at = next;
                for _ in 0..n {
                    if at >= bytes.len() {
                        return Err(RespError::Incomplete);
                    }
                    at = reply(bytes, at)?;
                }
                Ok(at)
            }
            _ => Err(RespError::BadLine(at)),
        },
        _ => Err(RespError::BadType(at)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_replies_are_counted() {
        let r = b"+OK\r\n-ERR x\r\n:-3\r\n$1\r\nv\r\n$-1\r\n*2\r\n$0\r\n\r\n*-1\r\n*0\r\n";
        // The array of two holds the empty bulk string and the null array: seven replies.
        assert_eq!(check_replies(r), Ok(7));
    }

    #[test]
    fn malformed_replies_are_refused() {
        assert_eq!(check_replies(b"+OK\r"), Err(RespError::Incomplete));
        assert_eq!(check_replies(b"$1\r\nab\r\n"), Err(RespError::BadLine(5)));
        assert_eq!(check_replies(b":01\r\n"), Err(RespError::BadLine(0)));
        assert_eq!(check_replies(b"*2\r\n+a\r\n"), Err(RespError::Incomplete));
        assert_eq!(check_replies(b"?\r\n"), Err(RespError::BadType(0)));
        assert_eq!(check_replies(b"+a\rb\r\n"), Err(RespError::BadLine(1)));
    }

    #[test]
    fn choices_run_out_as_zeros() {
        let mut c = Choices::new(&[7, 200]);
        assert_eq!(c.in_range(1, 4), 4);
        assert_eq!(c.in_range(0, 9), 0);
        assert_eq!(c.byte(), 0);
    }
}

//! C's `long double` on x86_64 (the x87 80-bit extended format: a 64-bit significand with an
//! explicit integer bit, exponents down to denormals of 2^-16445), in software, for
//! `INCRBYFLOAT`.
//!
//! Redis 7.0 computes `INCRBYFLOAT` as `strtold` of the stored value plus `strtold` of the
//! increment, refuses a NaN or infinite result, and stores `snprintf("%.17Lf")` of the sum with
//! the trailing zeros (and a trailing point) removed, `-0` written `0`. The replies depend on
//! every bit of the 64-bit significand (`0.1 + 0.2` is `0.30000000000000000` there, where a
//! `double` gives `0.30000000000000004`), so `f64` cannot stand in for it. This module does
//! the three steps as glibc does them, each correctly rounded (to nearest, ties to even):
//!
//! * [`parse`]: `strtold` as Redis's `string2ld` calls it: decimal (`1.5`, `.5`, `5.`, `1e-3`),
//!   hexadecimal (`0x1.8p3`), `inf`/`infinity`, with a sign; no leading space, nothing after
//!   the number, at most 5119 bytes; NaN, an overflow and an underflow to zero are refused.
//!   A decimal is converted exactly with big integers (`digits × 10^exp` as a quotient of
//!   integers, its 66 leading bits and whether anything remains), whose limbs live on the stack
//!   (two of [`LIMBS`] 32-bit limbs: 6 KiB, the bound the input length sets; the text buffer
//!   of the result, 5 KiB, is never on the stack at the same time);
//! * [`LongDouble::add`]: an exact sum on 128 bits plus a sticky bit, then rounded;
//! * [`LongDouble::format`]: `%.17Lf`, exact (a fraction on 128 bits; an integer of up to
//!   4933 digits through base-10^9 limbs), then trimmed as Redis trims.

/// The longest text [`LongDouble::format`] writes: the largest finite value has 4933 integer
/// digits, a sign and no fraction left after trimming; a value below 2^64 has at most 20
/// integer digits and 17 decimals.
pub(crate) const MAX_TEXT: usize = 4940;

/// The longest text `string2ld` converts (its buffer is 5120 bytes, one kept for the NUL).
const MAX_INPUT: usize = 5119;
/// The lowest exponent of the significand's last bit (denormals included).
const EMIN: i32 = -16445;
/// The highest exponent of the last bit of a finite value's significand.
const EMAX: i32 = 16383 - 63;
/// 32-bit limbs of a big integer: enough for 5^10071 shifted by 67 bits (the largest divisor
/// an input of [`MAX_INPUT`] bytes leads to) and for any finite value as an integer.
const LIMBS: usize = 768;

/// A `long double` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LongDouble {
    /// `(-1)^neg × m × 2^e`, with `m` normalized (its top bit set) or, at `e = EMIN`, a
    /// denormal; `m = 0` is a (signed) zero.
    Finite { neg: bool, m: u64, e: i32 },
    /// An infinity.
    Inf { neg: bool },
    /// Not a number (the sum of opposite infinities).
    Nan,
}

impl LongDouble {
    /// Positive zero.
    pub(crate) const ZERO: LongDouble = LongDouble::Finite {
        neg: false,
        m: 0,
        e: 0,
    };

    /// The value itself if it is finite.
    pub(crate) fn finite(self) -> Option<LongDouble> {
        matches!(self, LongDouble::Finite { .. }).then_some(self)
    }

    /// The correctly rounded sum `self + other`.
    pub(crate) fn add(self, other: LongDouble) -> LongDouble {
        use LongDouble::{Finite, Inf, Nan};
        let ((an, am, ae), (bn, bm, be)) = match (self, other) {
            (Nan, _) | (_, Nan) => return Nan,
            (Inf { neg: a }, Inf { neg: b }) if a != b => return Nan,
            (Inf { neg }, _) | (_, Inf { neg }) => return Inf { neg },
            (Finite { neg: a, m, e }, Finite { neg: b, m: n, e: f }) => ((a, m, e), (b, n, f)),
        };
        match (am, bm) {
            // -0 + -0 is -0; a zero with anything else is the other (+0 for +0 + -0).
            (0, 0) => {
                return Finite {
                    neg: an && bn,
                    m: 0,
                    e: 0,
                }
            }
            (0, _) => return other,
            (_, 0) => return self,
            _ => {}
        }
        // The operand with the larger exponent first; its significand at bit 63 + 63 of a
        // u128, so that the sum has room, and the other's aligned to it.
        let ((an, am, ae), (bn, bm, be)) = if ae >= be {
            ((an, am, ae), (bn, bm, be))
        } else {
            ((bn, bm, be), (an, am, ae))
        };
        let a = u128::from(am) << 63;
        let base = ae - 63;
        let shift = i64::from(be) - i64::from(base);
        let (b, sticky) = if shift >= 0 {
            (u128::from(bm) << shift, false)
        } else if -shift >= 128 {
            (0, true)
        } else {
            let s = (-shift) as u32;
            (
                u128::from(bm) >> s,
                u128::from(bm) & ((1u128 << s) - 1) != 0,
            )
        };
        if an == bn {
            return round(an, a + b, base, sticky);
        }
        // Opposite signs: the larger magnitude minus the smaller. A truncated `b` (sticky)
        // has its fraction taken from one more unit, which the sticky bit gives back.
        match a.cmp(&b) {
            core::cmp::Ordering::Equal if !sticky => LongDouble::ZERO,
            core::cmp::Ordering::Less => round(bn, b - a, base, false),
            _ => round(an, a - b - u128::from(sticky), base, sticky),
        }
    }

    /// `%.17Lf` of a finite value, without trailing zeros after the point (nor the point if
    /// nothing follows it), and `-0` written `0`: Redis's human-friendly `long double` text.
    /// Writes into `buf` and returns the text (empty for a value that is not finite).
    pub(crate) fn format(self, buf: &mut [u8; MAX_TEXT]) -> &[u8] {
        let LongDouble::Finite { neg, m, e } = self else {
            return &[];
        };
        let mut len = 0;
        if neg {
            buf[0] = b'-';
            len = 1;
        }
        if e > 64 {
            // An integer beyond 128 bits: no fraction.
            len += big_integer_digits(m, e, &mut buf[len..]);
        } else if e >= 0 {
            // An integer below 2^128.
            len += u128_digits(u128::from(m) << e, &mut buf[len..]);
        } else {
            // The value times 10^17 (below 2^121), rounded to an integer (ties to even):
            // integer digits, then 17 decimals.
            const SCALE: u128 = 100_000_000_000_000_000;
            let n = u128::from(m) * SCALE;
            let s = -e as u32;
            let scaled = if s >= 128 {
                0 // Less than half a unit.
            } else {
                let (q, rem) = (n >> s, n & ((1u128 << s) - 1));
                let half = 1u128 << (s - 1);
                q + u128::from(rem > half || (rem == half && q & 1 == 1))
            };
            let (int, frac) = (scaled / SCALE, scaled % SCALE);
            len += u128_digits(int, &mut buf[len..]);
            buf[len] = b'.';
            let mut f = frac;
            for i in (0..17).rev() {
                buf[len + 1 + i] = b'0' + (f % 10) as u8;
                f /= 10;
            }
            len += 18;
            while buf[len - 1] == b'0' {
                len -= 1;
            }
            if buf[len - 1] == b'.' {
                len -= 1;
            }
        }
        if &buf[..len] == b"-0" {
            buf[0] = b'0';
            len = 1;
        }
        &buf[..len]
    }
}

/// Writes the decimal digits of `n` into `out`; returns their count.
fn u128_digits(mut n: u128, out: &mut [u8]) -> usize {
    let mut tmp = [0u8; 40];
    let mut k = 0;
    loop {
        tmp[k] = b'0' + (n % 10) as u8;
        k += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..k {
        out[i] = tmp[k - 1 - i];
    }
    k
}

/// Writes the decimal digits of the integer `m × 2^e` into `out`; returns their count. The
/// number is built in base 10^9 limbs (least significant first), doubling 29 times at a go.
fn big_integer_digits(m: u64, e: i32, out: &mut [u8]) -> usize {
    const BASE: u64 = 1_000_000_000;
    // 4933 digits at most: 549 limbs of 9.
    let mut limbs = [0u32; 560];
    let mut n = 0;
    let mut v = m;
    while v > 0 {
        limbs[n] = (v % BASE) as u32;
        v /= BASE;
        n += 1;
    }
    let mut left = e;
    while left > 0 {
        let k = left.min(29);
        left -= k;
        let mut carry = 0u64;
        for l in &mut limbs[..n] {
            let x = (u64::from(*l) << k) + carry;
            *l = (x % BASE) as u32;
            carry = x / BASE;
        }
        while carry > 0 && n < limbs.len() {
            limbs[n] = (carry % BASE) as u32;
            carry /= BASE;
            n += 1;
        }
    }
    if n == 0 {
        out[0] = b'0';
        return 1;
    }
    let mut len = u128_digits(u128::from(limbs[n - 1]), out);
    for &l in limbs[..n - 1].iter().rev() {
        let mut x = l;
        for i in (0..9).rev() {
            out[len + i] = b'0' + (x % 10) as u8;
            x /= 10;
        }
        len += 9;
    }
    len
}

/// The value `(-1)^neg × (v + ε) × 2^e`, rounded to nearest (ties to even), where `ε` is a
/// fraction strictly between 0 and 1 when `sticky` and 0 otherwise. A `v` of fewer than 64
/// bits comes with `sticky` false (the callers keep at least 66 bits when they truncate).
fn round(neg: bool, v: u128, e: i32, sticky: bool) -> LongDouble {
    if v == 0 {
        // Only a tiny remainder: far below the smallest denormal's half.
        return LongDouble::Finite { neg, m: 0, e: 0 };
    }
    let bits = 128 - v.leading_zeros() as i32;
    let e64 = i64::from(e);
    // Bits to drop: down to 64, and further so that the last bit is not below EMIN.
    let shift = (i64::from(bits) - 64).max(i64::from(EMIN) - e64);
    let (mut m, mut e) = if shift > 0 {
        let (q, up) = if shift >= 129 {
            (0, false) // Below a quarter of the last bit's unit.
        } else {
            let s = shift as u32;
            let q = if s >= 128 { 0 } else { v >> s };
            let rem = if s >= 128 { v } else { v & ((1u128 << s) - 1) };
            let half = 1u128 << (s - 1);
            let up = rem > half || (rem == half && (sticky || q & 1 == 1));
            (q, up)
        };
        (q + u128::from(up), e64 + shift)
    } else {
        (v << -shift, e64 + shift)
    };
    if m >> 64 != 0 {
        // Rounding carried into bit 64.
        m >>= 1;
        e += 1;
    }
    if m == 0 {
        return LongDouble::Finite { neg, m: 0, e: 0 };
    }
    if e > i64::from(EMAX) {
        return LongDouble::Inf { neg };
    }
    LongDouble::Finite {
        neg,
        m: m as u64,
        e: e as i32,
    }
}

/// An unsigned big integer of [`LIMBS`] 32-bit limbs, least significant first.
struct Big {
    limbs: [u32; LIMBS],
    len: usize,
}

impl Big {
    fn new() -> Self {
        Big {
            limbs: [0; LIMBS],
            len: 0,
        }
    }

    /// `self = self × mul + add`; false if it no longer fits.
    fn mul_add(&mut self, mul: u32, add: u32) -> bool {
        let mut carry = u64::from(add);
        for l in &mut self.limbs[..self.len] {
            let x = u64::from(*l) * u64::from(mul) + carry;
            *l = x as u32;
            carry = x >> 32;
        }
        if carry > 0 {
            if self.len == LIMBS {
                return false;
            }
            self.limbs[self.len] = carry as u32;
            self.len += 1;
        }
        true
    }

    /// `self ×= 5^k`; false if it no longer fits.
    fn mul_pow5(&mut self, mut k: u32) -> bool {
        // 5^13 is the largest power of 5 below 2^32.
        while k > 0 {
            let step = k.min(13);
            k -= step;
            if !self.mul_add(5u32.pow(step), 0) {
                return false;
            }
        }
        true
    }

    fn bits(&self) -> u32 {
        match self.len {
            0 => 0,
            n => 32 * n as u32 - self.limbs[n - 1].leading_zeros(),
        }
    }

    fn bit(&self, i: u32) -> bool {
        let l = (i / 32) as usize;
        l < self.len && self.limbs[l] >> (i % 32) & 1 == 1
    }

    /// `self <<= s`; false if it no longer fits.
    fn shl(&mut self, s: u32) -> bool {
        if self.len == 0 {
            return true;
        }
        let (words, bits) = ((s / 32) as usize, s % 32);
        let new_len = (self.bits() + s).div_ceil(32) as usize;
        if new_len > LIMBS {
            return false;
        }
        for i in (0..new_len).rev() {
            let src = i as isize - words as isize;
            let hi = if src >= 0 && (src as usize) < self.len {
                self.limbs[src as usize]
            } else {
                0
            };
            let lo = if bits > 0 && src >= 1 && (src as usize - 1) < self.len {
                self.limbs[src as usize - 1] >> (32 - bits)
            } else {
                0
            };
            self.limbs[i] = if bits > 0 { hi << bits | lo } else { hi };
        }
        self.len = new_len;
        true
    }

    /// `self >>= 1`.
    fn shr1(&mut self) {
        for i in 0..self.len {
            let next = if i + 1 < self.len {
                self.limbs[i + 1]
            } else {
                0
            };
            self.limbs[i] = self.limbs[i] >> 1 | next << 31;
        }
        self.trim();
    }

    fn trim(&mut self) {
        while self.len > 0 && self.limbs[self.len - 1] == 0 {
            self.len -= 1;
        }
    }

    fn ge(&self, other: &Big) -> bool {
        if self.len != other.len {
            return self.len > other.len;
        }
        for i in (0..self.len).rev() {
            if self.limbs[i] != other.limbs[i] {
                return self.limbs[i] > other.limbs[i];
            }
        }
        true
    }

    /// `self -= other`, with `self >= other`.
    fn sub(&mut self, other: &Big) {
        let mut borrow = 0i64;
        for i in 0..self.len {
            let o = if i < other.len { other.limbs[i] } else { 0 };
            let x = i64::from(self.limbs[i]) - i64::from(o) - borrow;
            borrow = i64::from(x < 0);
            self.limbs[i] = x.rem_euclid(1 << 32) as u32;
        }
        self.trim();
    }

    fn is_zero(&self) -> bool {
        self.len == 0
    }

    /// The leading 128 bits (or all of them, fewer), the exponent of the last of them, and
    /// whether any bit below them is set.
    fn leading(&self) -> (u128, i32, bool) {
        let bits = self.bits();
        let low = bits.saturating_sub(128);
        let mut v = 0u128;
        for i in (low..bits).rev() {
            v = v << 1 | u128::from(self.bit(i));
        }
        let sticky = (0..low).any(|i| self.bit(i));
        (v, low as i32, sticky)
    }
}

/// `strtold` of `s` as Redis's `string2ld` accepts it; `None` where Redis answers "value is
/// not a valid float" (including an overflow, or an underflow to zero, which `strtold` flags).
pub(crate) fn parse(s: &[u8]) -> Option<LongDouble> {
    if s.is_empty() || s.len() > MAX_INPUT {
        return None;
    }
    let (neg, body) = match s[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = |t: &[u8], w: &str| t.eq_ignore_ascii_case(w.as_bytes());
    if lower(body, "inf") || lower(body, "infinity") {
        return Some(LongDouble::Inf { neg });
    }
    let v = if body.len() > 2 && lower(&body[..2], "0x") {
        parse_hex(neg, &body[2..])?
    } else {
        parse_decimal(neg, body)?
    };
    match v {
        LongDouble::Finite { .. } => Some(v),
        _ => None,
    }
}

/// The digits before and after the point (at least one in all), and the rest of `s`.
fn split_digits(s: &[u8], digit: impl Fn(u8) -> bool) -> Option<(&[u8], &[u8], &[u8])> {
    let int_len = s.iter().take_while(|&&b| digit(b)).count();
    let (int, rest) = s.split_at(int_len);
    let (frac, rest) = match rest.split_first() {
        Some((b'.', after)) => {
            let n = after.iter().take_while(|&&b| digit(b)).count();
            after.split_at(n)
        }
        _ => (&rest[..0], rest),
    };
    (!int.is_empty() || !frac.is_empty()).then_some((int, frac, rest))
}

/// The exponent after `e` (decimal) or `p` (hexadecimal): `rest` must be exactly the marker, a
/// sign and digits, or empty (0). Huge exponents saturate (they overflow or underflow anyway).
fn parse_exponent(rest: &[u8], marker: u8) -> Option<i64> {
    let Some((&m, after)) = rest.split_first() else {
        return Some(0);
    };
    if m.to_ascii_lowercase() != marker {
        return None;
    }
    let (neg, digits) = match after.split_first() {
        Some((b'-', d)) => (true, d),
        Some((b'+', d)) => (false, d),
        _ => (false, after),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        n = (n * 10 + i64::from(d - b'0')).min(1 << 40);
    }
    Some(if neg { -n } else { n })
}

/// A hexadecimal float (after its `0x`): hex digits with an optional point, then an optional
/// binary exponent `p[+-]N`.
fn parse_hex(neg: bool, s: &[u8]) -> Option<LongDouble> {
    let (int, frac, rest) = split_digits(s, |b| b.is_ascii_hexdigit())?;
    let exp = parse_exponent(rest, b'p')?;
    // The leading 124 bits of the digits, whether anything nonzero follows, and the binary
    // exponent of the last digit kept.
    let (mut v, mut sticky, mut e) = (0u128, false, exp - 4 * frac.len() as i64);
    for &d in int.iter().chain(frac) {
        let x = (d as char).to_digit(16).unwrap_or(0);
        if v >> 120 == 0 {
            v = v << 4 | u128::from(x);
        } else {
            sticky |= x != 0;
            e += 4;
        }
    }
    Some(scaled(neg, v, e, sticky))
}

/// `round` with an exponent that may be far out of range (saturating to an infinity or zero).
fn scaled(neg: bool, v: u128, e: i64, sticky: bool) -> LongDouble {
    if v == 0 {
        return LongDouble::Finite { neg, m: 0, e: 0 };
    }
    let e = e.clamp(-(1 << 20), 1 << 20) as i32;
    match round(neg, v, e, sticky) {
        // A nonzero value that rounds to zero underflowed: strtold flags it, Redis refuses it.
        LongDouble::Finite { m: 0, .. } => LongDouble::Nan,
        x => x,
    }
}

/// A decimal float: digits with an optional point, then an optional exponent `e[+-]N`. Not
/// inlined: its big integers are on the stack only while it runs.
#[inline(never)]
fn parse_decimal(neg: bool, s: &[u8]) -> Option<LongDouble> {
    let (int, frac, rest) = split_digits(s, |b| b.is_ascii_digit())?;
    let exp = parse_exponent(rest, b'e')?;
    // The significant digits (leading zeros dropped, trailing ones moved into the exponent).
    let all = || int.iter().chain(frac).copied();
    let lead = all().take_while(|&d| d == b'0').count();
    let total = int.len() + frac.len();
    if lead == total {
        return Some(LongDouble::Finite { neg, m: 0, e: 0 });
    }
    let trail = all().rev().take_while(|&d| d == b'0').count();
    let ndigits = total - lead - trail;
    let exp10 = exp - frac.len() as i64 + trail as i64;
    // value = D × 10^exp10 with D of ndigits digits: 10^(ndigits - 1 + exp10) <= value.
    let magnitude = ndigits as i64 + exp10;
    if magnitude > 4934 {
        return Some(LongDouble::Inf { neg });
    }
    if magnitude < -4952 {
        return None; // Below half the smallest denormal (3.6e-4951): an underflow.
    }
    let mut n = Big::new();
    let mut chunk = (0u32, 1u32);
    for d in all().skip(lead).take(ndigits) {
        chunk = (chunk.0 * 10 + u32::from(d - b'0'), chunk.1 * 10);
        if chunk.1 == 1_000_000_000 {
            n.mul_add(chunk.1, chunk.0);
            chunk = (0, 1);
        }
    }
    if chunk.1 > 1 {
        n.mul_add(chunk.1, chunk.0);
    }
    if exp10 >= 0 {
        // An integer: D × 5^exp10 × 2^exp10 (fits: below 2^16384 by the magnitude check).
        if !n.mul_pow5(exp10 as u32) {
            return Some(LongDouble::Inf { neg }); // Unreachable: the magnitude check bounds it.
        }
        let (v, e, sticky) = n.leading();
        return Some(scaled(neg, v, i64::from(e) + exp10, sticky));
    }
    // D / (5^k × 2^k): the quotient of D × 2^s by 5^k on 66 to 67 bits, then the remainder.
    let k = (-exp10) as u32;
    let mut d = Big::new();
    d.mul_add(1, 1);
    if !d.mul_pow5(k) {
        return None; // Unreachable: the magnitude checks bound k.
    }
    let s = i64::from(d.bits()) - i64::from(n.bits()) + 66;
    let fits = if s >= 0 {
        n.shl(s as u32)
    } else {
        d.shl((-s) as u32)
    };
    if !fits || !d.shl(67) {
        return None; // Unreachable: LIMBS covers the largest operands.
    }
    let mut q = 0u128;
    for _ in 0..=67 {
        q <<= 1;
        if n.ge(&d) {
            n.sub(&d);
            q |= 1;
        }
        d.shr1();
    }
    let e = -s - i64::from(k);
    Some(scaled(neg, q, e, !n.is_zero()))
}

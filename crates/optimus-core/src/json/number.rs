//! JSON number converter ops: exact integers from decimal text, range-checked floats, and
//! shortest round-trip float output.
//!
//! Integers are read exactly from the digits (never through `f64`), so `1e5`, `100.000` and
//! `9223372036854775807` are all exact; anything with a fractional part is rejected.

use std::fmt::Write;

use super::reader::is_number;

/// Why text is not an integer of the wanted range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntError {
    /// Not a JSON number at all (`3x3`, ` 1`, `+1`, `0x10`).
    NotNumber,
    /// A number with a non-zero fractional part (`0.5`).
    NotInteger,
    /// An integer beyond the range.
    OutOfRange,
}

impl IntError {
    /// What to tell the user.
    pub(crate) fn why(self) -> &'static str {
        match self {
            IntError::NotNumber => "not a number",
            IntError::NotInteger => "not an integer",
            IntError::OutOfRange => "integer out of range",
        }
    }
}

/// Exponents beyond this are clamped: they are out of range (or zero) either way.
const EXPONENT_CLAMP: i64 = 1 << 20;

/// The exact integer value of the JSON number `text`, if it is one within `[min, max]`.
pub(crate) fn parse_integer(text: &str, min: i128, max: i128) -> Result<i128, IntError> {
    if let Some(v) = plain_integer(text) {
        return if v < min || v > max {
            Err(IntError::OutOfRange)
        } else {
            Ok(v)
        };
    }
    if !is_number(text) {
        return Err(IntError::NotNumber);
    }
    let b = text.as_bytes();
    let negative = b[0] == b'-';
    let mantissa_end = b
        .iter()
        .position(|&c| c == b'e' || c == b'E')
        .unwrap_or(b.len());
    let mut exponent: i64 = 0;
    if mantissa_end < b.len() {
        let exp = &b[mantissa_end + 1..];
        let (sign, digits) = match exp[0] {
            b'-' => (-1, &exp[1..]),
            b'+' => (1, &exp[1..]),
            _ => (1, exp),
        };
        for &d in digits {
            exponent = (exponent * 10 + i64::from(d - b'0')).min(EXPONENT_CLAMP);
        }
        exponent *= sign;
    }
    // Significant digits: integer part then fraction, the fraction shifting the exponent.
    let mantissa = &b[usize::from(negative)..mantissa_end];
    let (int_part, frac_part) = match mantissa.iter().position(|&c| c == b'.') {
        Some(dot) => (&mantissa[..dot], &mantissa[dot + 1..]),
        None => (mantissa, &mantissa[..0]),
    };
    let digits = || int_part.iter().chain(frac_part);
    let leading_zeros = digits().take_while(|&&d| d == b'0').count();
    let total = int_part.len() + frac_part.len();
    if leading_zeros == total {
        return Ok(0);
    }
    let trailing_zeros = digits().rev().take_while(|&&d| d == b'0').count();
    let significant = total - leading_zeros - trailing_zeros;
    exponent += trailing_zeros as i64 - frac_part.len() as i64;
    if exponent < 0 {
        return Err(IntError::NotInteger);
    }
    // 10^20 > 2^64: more digits than that cannot be in any protobuf integer range.
    if significant as i64 + exponent > 20 {
        return Err(IntError::OutOfRange);
    }
    let mut v: i128 = 0;
    for &d in digits().skip(leading_zeros).take(significant) {
        v = v * 10 + i128::from(d - b'0');
    }
    for _ in 0..exponent {
        v *= 10;
    }
    if negative {
        v = -v;
    }
    if v < min || v > max {
        return Err(IntError::OutOfRange);
    }
    Ok(v)
}

/// The value of the commonest integer text, an optional `-` and 1 to 20 digits without a
/// leading zero, a valid JSON number whose magnitude fits a `u64` (every protobuf integer
/// range lies inside that); `None` for any other text, which [`parse_integer`] reads the long
/// way.
#[inline]
fn plain_integer(text: &str) -> Option<i128> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        all => (false, all),
    };
    if !matches!(digits.len(), 1..=20) || (digits[0] == b'0' && digits.len() > 1) {
        return None;
    }
    let mut v = 0u64;
    for &d in digits {
        let digit = d.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    let v = i128::from(v);
    Some(if negative { -v } else { v })
}

/// A float field's value from a JSON number's text: `None` when it is beyond the range of
/// `f64` (or, with `is_f32`, of `f32`).
pub(crate) fn parse_float(text: &str, is_f32: bool) -> Option<f64> {
    let v: f64 = text.parse().ok()?;
    // A float accepts what rounds to a finite `f32`: its shortest form (`3.4028235e38` for
    // the largest) may lie a little beyond `f32::MAX` read as a double.
    if !v.is_finite() || (is_f32 && !(v as f32).is_finite()) {
        return None;
    }
    Some(v)
}

/// A float field's value from a quoted string: `NaN`, `Infinity`, `-Infinity` or a number.
pub(crate) fn parse_float_string(s: &str, is_f32: bool) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ if is_number(s) => parse_float(s, is_f32),
        _ => None,
    }
}

/// An integer JSON writes: its sign and magnitude.
pub(crate) trait Integer: Copy {
    /// Whether it is negative, and its absolute value.
    fn sign_magnitude(self) -> (bool, u64);
}

impl Integer for u32 {
    #[inline(always)]
    fn sign_magnitude(self) -> (bool, u64) {
        (false, u64::from(self))
    }
}

impl Integer for u64 {
    #[inline(always)]
    fn sign_magnitude(self) -> (bool, u64) {
        (false, self)
    }
}

impl Integer for i32 {
    #[inline(always)]
    fn sign_magnitude(self) -> (bool, u64) {
        (self < 0, u64::from(self.unsigned_abs()))
    }
}

impl Integer for i64 {
    #[inline(always)]
    fn sign_magnitude(self) -> (bool, u64) {
        (self < 0, self.unsigned_abs())
    }
}

/// The two ASCII digits of every number below 100.
static DIGIT_PAIRS: [[u8; 2]; 100] = {
    let mut pairs = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        pairs[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    pairs
};

/// Decimal digits of `v` (1 to 20): the power of ten its bit length points at, checked.
#[inline(always)]
fn decimal_len(v: u64) -> usize {
    const POW10: [u64; 20] = {
        let mut p = [1u64; 20];
        let mut i = 1;
        while i < 20 {
            p[i] = p[i - 1] * 10;
            i += 1;
        }
        p
    };
    let bits = 64 - (v | 1).leading_zeros() as usize;
    let t = (bits * 1233) >> 12;
    (t + usize::from(v >= POW10[t])).max(1)
}

/// Appends `n` in decimal, between quotes when `quote`, straight into `out`: its length
/// found first, then the digits written from the last, two at a time from a table (writing
/// them elsewhere and copying them in would stall on the copy's wide loads).
#[inline]
pub(crate) fn write_integer(out: &mut String, n: impl Integer, quote: bool) {
    let (negative, mut v) = n.sign_magnitude();
    let q = usize::from(quote);
    let len = decimal_len(v) + usize::from(negative) + 2 * q;
    out.reserve(len);
    // SAFETY: `len` bytes of room were reserved after what `out` holds, and the writes below
    // fill exactly them (quotes, sign, digits; all ASCII, so `out` stays UTF-8) before its
    // length takes them in.
    unsafe {
        let text = out.as_mut_vec();
        let start = text.len();
        let p = text.as_mut_ptr().add(start);
        *p = b'"';
        *p.add(len - 1) = b'"';
        *p.add(q) = b'-';
        let mut at = len - q;
        let pair = |at: usize, two: usize| {
            p.add(at)
                .copy_from_nonoverlapping(DIGIT_PAIRS[two].as_ptr(), 2)
        };
        while v >= 10_000 {
            let four = (v % 10_000) as usize;
            v /= 10_000;
            at -= 4;
            pair(at, four / 100);
            pair(at + 2, four % 100);
        }
        let mut v = v as usize;
        if v >= 100 {
            at -= 2;
            pair(at, v % 100);
            v /= 100;
        }
        if v >= 10 {
            pair(at - 2, v);
        } else {
            *p.add(at - 1) = b'0' + v as u8;
        }
        text.set_len(start + len);
    }
}

/// Appends a `double` in JSON: the shortest digits that read back to the same value, in the
/// ECMAScript layout (`0.001`, `1e+21`, `1.5e-7`); NaN and the infinities quoted.
pub(crate) fn write_f64(out: &mut String, v: f64) {
    if let Some(s) = special(v) {
        out.push_str(s);
    } else {
        shortest(out, zmij::Buffer::new().format_finite(v));
    }
}

/// Appends a `float` in JSON, with the shortest digits that read back to the same `f32`.
pub(crate) fn write_f32(out: &mut String, v: f32) {
    if let Some(s) = special(f64::from(v)) {
        out.push_str(s);
    } else {
        shortest(out, zmij::Buffer::new().format_finite(v));
    }
}

/// Appends the shortest text of a float (zmij's, laid out as Ryu lays it out) in the
/// ECMAScript layout. Without an exponent it is already that layout (plain decimals only
/// between 1e-5 and 1e16, inside ECMAScript's 1e-7 to 1e21), once the `.0` of a whole
/// number is dropped.
#[inline]
fn shortest(out: &mut String, text: &str) {
    // An exponent is the text's end (`e-7`, `e+308`): its `e` is one of the last five bytes,
    // never the last one.
    let (b, n) = (text.as_bytes(), text.len());
    let e_at = |k: usize| n >= k && b[n - k] == b'e';
    if e_at(2) | e_at(3) | e_at(4) | e_at(5) {
        layout(out, text);
    } else {
        crate::json::encode::push_short(out, text.strip_suffix(".0").unwrap_or(text));
    }
}

fn special(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("\"NaN\"")
    } else if v == f64::INFINITY {
        Some("\"Infinity\"")
    } else if v == f64::NEG_INFINITY {
        Some("\"-Infinity\"")
    } else {
        None
    }
}

fn zeros(out: &mut String, n: i32) {
    for _ in 0..n {
        out.push('0');
    }
}

/// Rewrites a float's shortest digits, laid out as Ryu does (`-1.25e-7`, `0.001`, `1e+21`,
/// `123.0`), in the ECMAScript layout.
fn layout(out: &mut String, text: &str) {
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(t) => ("-", t),
        None => ("", text),
    };
    let (mantissa, exp) = unsigned.split_once('e').unwrap_or((unsigned, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The significant digits, from the first non-zero one of `int` then `frac`, and the
    // power of ten of the first of them.
    let mut digits = [0u8; 24];
    let mut len = 0;
    let mut exp = exp + int.len() as i32 - 1;
    for &d in int.as_bytes().iter().chain(frac.as_bytes()) {
        if len == 0 && d == b'0' {
            exp -= 1;
        } else if len < digits.len() {
            digits[len] = d;
            len += 1;
        }
    }
    while len > 0 && digits[len - 1] == b'0' {
        len -= 1;
    }
    if len == 0 {
        digits[0] = b'0';
        len = 1;
        exp = 0;
    }
    // ASCII digits only.
    let digits = std::str::from_utf8(&digits[..len]).unwrap_or("0");
    let (lead, rest) = digits.split_at(1);
    out.push_str(sign);
    let n = 1 + rest.len() as i32;
    if (0..21).contains(&exp) {
        out.push_str(lead);
        if n - 1 <= exp {
            out.push_str(rest);
            zeros(out, exp - (n - 1));
        } else {
            out.push_str(&rest[..exp as usize]);
            out.push('.');
            out.push_str(&rest[exp as usize..]);
        }
    } else if (-6..0).contains(&exp) {
        out.push_str("0.");
        zeros(out, -exp - 1);
        out.push_str(lead);
        out.push_str(rest);
    } else {
        out.push_str(lead);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let _ = write!(
            out,
            "e{}{}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_written_as_rust_writes_them() {
        let mut values: Vec<i128> = vec![0, 9, 10, 99, 100, 9999, 10_000, 99_999, 100_000];
        for k in 0..20 {
            let p = 10i128.pow(k);
            values.extend([p - 1, p, p + 1, -p, -(p - 1)]);
        }
        values.extend([
            i128::from(i32::MIN),
            i128::from(i32::MAX),
            i128::from(i64::MIN),
            i128::from(i64::MAX),
            i128::from(u32::MAX),
            i128::from(u64::MAX),
        ]);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            values.push(i128::from(seed >> (seed % 64)));
            values.push(-i128::from((seed >> (seed % 64)) as i64 & i64::MAX));
        }
        for v in values {
            let mut out = String::from("x");
            if let Ok(n) = i32::try_from(v) {
                write_integer(&mut out, n, false);
                write_integer(&mut out, n, true);
                assert_eq!(out, format!("x{v}\"{v}\""));
                out.truncate(1);
            }
            if let Ok(n) = u32::try_from(v) {
                write_integer(&mut out, n, true);
                assert_eq!(out, format!("x\"{v}\""));
                out.truncate(1);
            }
            if let Ok(n) = i64::try_from(v) {
                write_integer(&mut out, n, false);
                assert_eq!(out, format!("x{v}"));
                out.truncate(1);
            }
            if let Ok(n) = u64::try_from(v) {
                write_integer(&mut out, n, true);
                assert_eq!(out, format!("x\"{v}\""));
            }
        }
    }

    const I32: (i128, i128) = (i32::MIN as i128, i32::MAX as i128);
    const U64: (i128, i128) = (0, u64::MAX as i128);
    const I64: (i128, i128) = (i64::MIN as i128, i64::MAX as i128);

    /// The shortest digits (zmij's), laid out, read back to the value and are as few as those of Rust's own
    /// shortest form (`{:e}`, Grisu with a Dragon fallback); where the two differ, the value
    /// lies halfway between them and zmij's last digit is the even one (as ECMAScript's
    /// `Number.prototype.toString` and C's `printf` choose; Rust rounds half up). Over edge
    /// values and a million random bit patterns of each width.
    #[test]
    fn float_digits_are_shortest_and_ties_go_to_even() {
        // Exactly halfway between 1658206780088562.2 and ...3 (its ulp is 0.25).
        const TIE: f64 = 1658206780088562.0 + 0.25;
        let edges = [
            0.0,
            -0.0,
            1.0,
            0.1,
            1e21,
            1e-7,
            123456789012345680.0,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            9007199254740993.0,
            TIE,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let check = |ours: &str, rust: &str, reads_back: bool| {
            assert!(reads_back, "{ours} does not read back");
            if ours != rust {
                let last = |s: &str| s.split('e').next().unwrap().bytes().last().unwrap();
                assert_eq!(ours.len(), rust.len(), "{ours} vs {rust}");
                assert_eq!((last(ours) - b'0') % 2, 0, "{ours} vs {rust}");
                assert_eq!(last(ours).abs_diff(last(rust)), 1, "{ours} vs {rust}");
            }
        };
        let (mut ours, mut rust) = (String::new(), String::new());
        for i in 0..1_000_000 {
            let bits = next();
            let v = edges.get(i).copied().unwrap_or(f64::from_bits(bits));
            if v.is_finite() {
                ours.clear();
                rust.clear();
                write_f64(&mut ours, v);
                layout(&mut rust, &format!("{v:e}"));
                check(
                    &ours,
                    &rust,
                    ours.parse::<f64>().unwrap().to_bits() == v.to_bits(),
                );
            }
            let f = f32::from_bits(bits as u32);
            if f.is_finite() {
                ours.clear();
                rust.clear();
                write_f32(&mut ours, f);
                layout(&mut rust, &format!("{f:e}"));
                check(
                    &ours,
                    &rust,
                    ours.parse::<f32>().unwrap().to_bits() == f.to_bits(),
                );
            }
        }
        let mut tie = String::new();
        write_f64(&mut tie, TIE);
        assert_eq!(tie, "1658206780088562.2");
    }

    #[test]
    fn integers_are_exact() {
        let p = |s, (lo, hi)| parse_integer(s, lo, hi);
        assert_eq!(p("1e5", I32), Ok(100_000));
        assert_eq!(p("100000.000", I32), Ok(100_000));
        assert_eq!(p("2.147483647e9", I32), Ok(2_147_483_647));
        assert_eq!(p("-2.147483648e9", I32), Ok(-2_147_483_648));
        assert_eq!(p("2147483648", I32), Err(IntError::OutOfRange));
        assert_eq!(p("-2147483649", I32), Err(IntError::OutOfRange));
        assert_eq!(p("-0", I32), Ok(0));
        assert_eq!(p("0.0e-999999999999", I32), Ok(0));
        assert_eq!(p("0.5", I32), Err(IntError::NotInteger));
        assert_eq!(p("1e-1", I32), Err(IntError::NotInteger));
        assert_eq!(p("1.5e1", I32), Ok(15));
        assert_eq!(p("1e999999999999999", I32), Err(IntError::OutOfRange));
        assert_eq!(p("9223372036854775807", I64), Ok(i64::MAX as i128));
        assert_eq!(p("-9223372036854775808", I64), Ok(i64::MIN as i128));
        assert_eq!(p("9223372036854775808", I64), Err(IntError::OutOfRange));
        assert_eq!(p("18446744073709551615", U64), Ok(u64::MAX as i128));
        assert_eq!(p("18446744073709551616", U64), Err(IntError::OutOfRange));
        assert_eq!(p("-1", U64), Err(IntError::OutOfRange));
        assert_eq!(
            p("100000000000000000000000", U64),
            Err(IntError::OutOfRange)
        );
        // The plain form (up to 20 digits) and the long way agree at its boundary.
        assert_eq!(p("999999999999999999", I64), Ok(999_999_999_999_999_999));
        assert_eq!(p("-999999999999999999", I64), Ok(-999_999_999_999_999_999));
        assert_eq!(p("1000000000000000000", I64), Ok(1_000_000_000_000_000_000));
        assert_eq!(p("-7", I32), Ok(-7));
        assert_eq!(p("99999999999999999999", U64), Err(IntError::OutOfRange));
        assert_eq!(p("184467440737095516150", U64), Err(IntError::OutOfRange));
        assert_eq!(p("1844674407370955161.5e1", U64), Ok(u64::MAX as i128));
        for bad in [
            "3x3", " 1", "1 ", "+1", "0x10", "01", "", "1e", "Infinity", "-", "-01", "--1",
        ] {
            assert_eq!(p(bad, I64), Err(IntError::NotNumber), "{bad}");
        }
    }

    #[test]
    fn floats_check_their_range() {
        assert_eq!(parse_float("3.402823e+38", true), Some(3.402823e38));
        assert_eq!(parse_float("3.502823e+38", true), None);
        assert_eq!(parse_float("3.4028235e38", true), Some(3.4028235e38));
        assert_eq!(parse_float("3.40282356e38", true), Some(3.40282356e38));
        assert_eq!(parse_float("3.40282357e38", true), None);
        assert_eq!(parse_float("1e39", true), None);
        assert_eq!(parse_float("1e39", false), Some(1e39));
        assert_eq!(parse_float("1.89769e+308", false), None);
        assert!(parse_float_string("NaN", true).unwrap().is_nan());
        assert_eq!(
            parse_float_string("-Infinity", false),
            Some(f64::NEG_INFINITY)
        );
        assert_eq!(parse_float_string("1.5", false), Some(1.5));
        assert_eq!(parse_float_string("nan", false), None);
        assert_eq!(parse_float_string(" 1", false), None);
    }

    #[test]
    fn floats_are_written_shortest() {
        let f64s = |v: f64| {
            let mut s = String::new();
            write_f64(&mut s, v);
            s
        };
        let f32s = |v: f32| {
            let mut s = String::new();
            write_f32(&mut s, v);
            s
        };
        assert_eq!(f64s(0.0), "0");
        assert_eq!(f64s(-0.0), "-0");
        assert_eq!(f64s(1.0), "1");
        assert_eq!(f64s(1234.5678), "1234.5678");
        assert_eq!(f64s(0.001), "0.001");
        assert_eq!(f64s(-1e-6), "-0.000001");
        assert_eq!(f64s(1e-7), "1e-7");
        assert_eq!(f64s(1.5e-7), "1.5e-7");
        assert_eq!(f64s(1e20), "100000000000000000000");
        assert_eq!(f64s(1e21), "1e+21");
        assert_eq!(f64s(-1.79769e308), "-1.79769e+308");
        assert_eq!(f64s(f64::NAN), "\"NaN\"");
        assert_eq!(f64s(f64::NEG_INFINITY), "\"-Infinity\"");
        assert_eq!(f32s(1.175494e-38), "1.175494e-38");
        assert_eq!(f32s(0.1), "0.1");
        assert_eq!(f32s(f32::MAX), "3.4028235e+38");
        for v in [0.1f64, 1.0 / 3.0, 5e-324, f64::MAX, 123456789.125] {
            assert_eq!(f64s(v).parse::<f64>().unwrap(), v);
        }
    }
}

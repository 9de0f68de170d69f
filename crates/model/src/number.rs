//! Numbers in messages. Rust writes an `f64` in full, so a rate of `1e300` given on the command
//! line came back as a 301-digit number in its error; every number a message quotes goes
//! through [`short`].

/// `v` as a person would write it: plainly when that is short (`0.25`, `3200000000`), else in
/// the shortest scientific form that reads back as the same number (`1e300`, `1e-300`).
pub fn short(v: f64) -> String {
    let plain = v.to_string();
    // 16 characters hold every integer an f64 holds exactly, and any plain decimal a person
    // would type; past that the plain form is a run of digits no one wrote.
    if plain.len() <= 16 || !v.is_finite() {
        plain
    } else {
        format!("{v:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::short;

    #[test]
    fn numbers_read_as_written_or_in_short_scientific_form() {
        assert_eq!(short(1e300), "1e300");
        assert_eq!(short(1e308), "1e308");
        assert_eq!(short(-1.5e200), "-1.5e200");
        assert_eq!(short(1.5e-7), "0.00000015");
        assert_eq!(short(1e-300), "1e-300");
        assert_eq!(short(0.2294946), "0.2294946");
        assert_eq!(short(3.2e9), "3200000000");
        assert_eq!(short(10_000_000.0), "10000000");
        assert_eq!(short(f64::MAX), "1.7976931348623157e308");
        assert_eq!(short(f64::INFINITY), "inf");
        assert_eq!(short(f64::NAN), "NaN");
    }
}

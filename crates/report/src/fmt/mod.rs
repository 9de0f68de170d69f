//! Every number, unit and sentence a reader sees, written once for every renderer (terminal,
//! Markdown, HTML, CSV, the JSON summary and the binary's messages), so that the formats cannot
//! drift apart: this module holds numbers and units, [`words`] the sentences.

pub mod words;

use crest_analysis::units::Quantity;
use crest_model::monitor::Unit;

/// Milliseconds with precision that fits their size.
pub fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// An integer with thousands separators.
pub fn int(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A rate or other real number, with one decimal.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let v = v.abs();
    let tenths = (v * 10.0).round() as u64;
    format!("{sign}{}.{}", int(tenths / 10), tenths % 10)
}

/// A fraction as a percentage with two decimals.
pub fn pct(v: f64) -> String {
    format!("{:.2}%", v * 100.0)
}

/// A share of a count, to a tenth of a percent, with more digits where a tenth would round
/// some to none or all but some to all: 54 successes of 111,061 requests leave "99.95%" failed,
/// not "100.0%".
pub fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "0.0%".into();
    }
    let v = part as f64 / whole as f64 * 100.0;
    for decimals in 1..=4 {
        let s = format!("{v:.decimals$}");
        let all = s.parse::<f64>().is_ok_and(|r| r >= 100.0);
        let none = s.parse::<f64>().is_ok_and(|r| r <= 0.0);
        if !(all && part < whole || none && part > 0) {
            return format!("{s}%");
        }
    }
    format!("{v:.4}%")
}

/// Bytes in binary units.
pub fn bytes(n: u64) -> String {
    byte_size(n as f64, 1)
}

/// A size in bytes, which may be fractional or negative (a mean, a trend), in binary units, with
/// `large_decimals` decimals from GiB on: a monitored size is compared across steps and runs,
/// where a tenth of a GiB hides what changed.
fn byte_size(v: f64, large_decimals: usize) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut scaled = v;
    let mut u = 0;
    while scaled.abs() >= 1024.0 && u < UNITS.len() - 1 {
        scaled /= 1024.0;
        u += 1;
    }
    match u {
        0 => format!("{v:.0} B"),
        1 | 2 => format!("{scaled:.1} {}", UNITS[u]),
        _ => format!("{scaled:.large_decimals$} {}", UNITS[u]),
    }
}

/// A monitored value with its unit.
pub fn value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Percent => format!("{v:.1}%"),
        Unit::Bytes => byte_size(v, 2),
        Unit::Count => {
            if (v - v.round()).abs() < 1e-9 || v.abs() >= 100.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.1}")
            }
        }
        Unit::PerSecond => format!("{v:.1}/s"),
        Unit::Seconds => {
            if v.abs() < 1.0 {
                format!("{:.1} ms", v * 1000.0)
            } else {
                format!("{v:.2} s")
            }
        }
        Unit::Number => {
            if v.abs() >= 100.0 {
                format!("{v:.0}")
            } else {
                let s = format!("{v:.2}");
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            }
        }
    }
}

/// A measured quantity with its unit.
pub fn quantity(q: Quantity) -> String {
    match q {
        Quantity::Ms(v) => format!("{v:.1} ms"),
        Quantity::Fraction(v) => format!("{:.2}%", v * 100.0),
        Quantity::PerSecond(v) => format!("{v:.1}/s"),
        Quantity::Count(v) => format!("{v:.0}"),
        Quantity::Monitored(unit, v) => value(unit, v),
    }
}

/// How a series' values are scaled for a table column or a chart axis, and the unit they are
/// then in: sizes in MiB, durations in ms (as every latency crest reports), the rest as
/// recorded.
pub fn scale(unit: Unit) -> (f64, &'static str) {
    match unit {
        Unit::Bytes => (1.0 / 1048576.0, "MiB"),
        Unit::Seconds => (1000.0, "ms"),
        Unit::Percent => (1.0, "%"),
        Unit::PerSecond => (1.0, "/s"),
        Unit::Count | Unit::Number => (1.0, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A share rounds to none or all only when it is: 54 of 111,061 succeeded.
    #[test]
    fn a_share_is_all_or_none_only_when_it_is() {
        assert_eq!(share(111_007, 111_061), "99.95%");
        assert_eq!(share(1, 100_000), "0.001%");
        assert_eq!(share(81, 1_208), "6.7%");
        assert_eq!(share(5, 5), "100.0%");
        assert_eq!(share(0, 5), "0.0%");
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(int(0), "0");
        assert_eq!(int(1234567), "1,234,567");
        assert_eq!(num(1234.56), "1,234.6");
        assert_eq!(num(0.96), "1.0");
        assert_eq!(num(-2.5), "-2.5");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(ms(20.04), "20.0");
        assert_eq!(ms(0.123), "0.12");
        assert_eq!(pct(0.0123), "1.23%");
        assert_eq!(bytes(3 * 1024 * 1024 * 1024 / 2), "1.5 GiB");
    }

    #[test]
    fn values_read_with_their_units() {
        assert_eq!(value(Unit::Bytes, 512.0 * 1024.0 * 1024.0), "512.0 MiB");
        assert_eq!(value(Unit::Bytes, -2048.0), "-2.0 KiB");
        assert_eq!(value(Unit::Bytes, 100.4), "100 B");
        assert_eq!(value(Unit::Bytes, 1.5 * 1024.0 * 1024.0 * 1024.0), "1.50 GiB");
        assert_eq!(value(Unit::Percent, 97.25), "97.2%");
        assert_eq!(value(Unit::Count, 1024.0), "1024");
        assert_eq!(value(Unit::Seconds, 0.25), "250.0 ms");
        assert_eq!(value(Unit::Number, 3.0), "3");
        assert_eq!(value(Unit::Number, 3.40), "3.4");
        assert_eq!(quantity(Quantity::Fraction(0.128)), "12.80%");
        assert_eq!(quantity(Quantity::Ms(8.0)), "8.0 ms");
    }
}

/// Text for a Markdown file, which viewers render as HTML: outside code spans, `&`, `<` and `>`
/// become entities, so text a server sent (an error message quoting its body, say) cannot add
/// markup or script; inside code spans it shows as written. Line breaks become spaces, so the
/// text stays in its line or table cell.
pub fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let parts: Vec<&str> = s.split('`').collect();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push('`');
        }
        // A backtick with no partner opens no code span: what follows it is plain text.
        let plain = i % 2 == 0 || i + 1 == parts.len();
        for ch in part.chars() {
            match ch {
                '&' if plain => out.push_str("&amp;"),
                '<' if plain => out.push_str("&lt;"),
                '>' if plain => out.push_str("&gt;"),
                c if c.is_control() => out.push(' '),
                c => out.push(c),
            }
        }
    }
    out
}

/// Text for a CSV cell that people open in a spreadsheet: control characters become spaces,
/// markup is escaped as in the reports, and a cell that a spreadsheet would run as a formula
/// (`=`, `+`, `-`, `@` first) is prefixed with `'`, so text a server sent stays text.
pub fn csv_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 1);
    if s.starts_with(['=', '+', '-', '@']) {
        out.push('\'');
    }
    for ch in s.chars() {
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod text_tests {
    use super::*;

    #[test]
    fn server_text_cannot_add_markup() {
        assert_eq!(
            md_text("HTTP 500: <script>alert(1)</script> & `p95 < 2ms`\r\nx"),
            "HTTP 500: &lt;script&gt;alert(1)&lt;/script&gt; &amp; `p95 < 2ms`  x"
        );
        assert_eq!(
            md_text("`x <b>"),
            "`x &lt;b&gt;",
            "an unpaired backtick is no code span"
        );
        assert_eq!(csv_text("=HYPERLINK(\"x\")<b>"), "'=HYPERLINK(\"x\")&lt;b&gt;");
        assert_eq!(csv_text("plain"), "plain");
    }
}

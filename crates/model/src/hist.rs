//! Latency histograms and their portable encoding.
//!
//! All latencies are recorded in microseconds into HDR histograms with three significant digits
//! from 1 µs to one hour. Histograms are stored in the results document in HdrHistogram's V2
//! compressed format, base64-encoded, so that runs can be merged exactly later (histograms add)
//! and HdrHistogram's own tools can read them.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use std::time::Duration;

/// The largest value a histogram holds: one hour, in microseconds. Longer values are clamped.
pub const MAX_MICROS: u64 = 3_600_000_000;

/// A new, empty latency histogram with crest's standard bounds (1 µs to an hour, 3 digits).
pub fn new_histogram() -> Histogram<u64> {
    // Bounds are constants that hdrhistogram accepts, so this cannot fail.
    let mut h = Histogram::new_with_bounds(1, START_MICROS, 3).expect("constant histogram bounds are valid");
    h.auto(true);
    h
}

/// What a new histogram holds before it grows: 65 ms, in 8,192 counters (64 KiB). Each engine
/// thread starts several histograms (per name, and for send lag and service time) each second
/// on its hot path. One sized for an hour has 23,552 counters (184 KiB) to allocate and zero,
/// which held an engine thread at 50,000 arrivals/s up for 0.4 to 0.9 ms every second
/// (bench/README.md, "Pacing"). It grows as values need, up to [`MAX_MICROS`], where values
/// are clamped.
const START_MICROS: u64 = 1 << 16;

/// Records a duration in microseconds, clamped to the histogram's range.
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    let us = u64::try_from(d.as_micros()).unwrap_or(MAX_MICROS).clamp(1, MAX_MICROS);
    put(h, us, 1);
}

/// Records a byte count, clamped to the histogram's range (the same bounds serve sizes: up to
/// 3.6 GB a request, at three significant digits).
pub fn record_bytes(h: &mut Histogram<u64>, bytes: u64) {
    put(h, bytes.clamp(1, MAX_MICROS), 1);
}

/// Records `n` of a value already within bounds, growing the histogram to hold it (a
/// saturating record would clamp it to the histogram's current top instead).
fn put(h: &mut Histogram<u64>, v: u64, n: u64) {
    if h.record_n(v, n).is_err() {
        h.saturating_record_n(v, n);
    }
}

/// Milliseconds from microseconds, the unit of every latency histogram.
pub fn us_to_ms(us: f64) -> f64 {
    us / 1000.0
}

/// Adds `from` into `into`. Histograms from crest share bounds; a foreign one with wider bounds
/// is clamped into them rather than refused.
pub fn add(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    if into.add(from).is_err() {
        for v in from.iter_recorded() {
            put(into, v.value_iterated_to().clamp(1, MAX_MICROS), v.count_at_value());
        }
    }
}

/// Adds `from`, when there is one, into `into`, which starts empty the first time.
pub fn add_opt(into: &mut Option<Histogram<u64>>, from: Option<&Histogram<u64>>) {
    if let Some(f) = from {
        add(into.get_or_insert_with(new_histogram), f);
    }
}

/// Adds an encoded histogram, as a journal holds it, when there is one.
pub fn add_encoded(into: &mut Option<Histogram<u64>>, from: Option<&EncodedHistogram>) -> Result<(), HistError> {
    if let Some(f) = from {
        add(into.get_or_insert_with(new_histogram), &f.decode()?);
    }
    Ok(())
}

/// A latency (or size) histogram that costs what it holds: while few of its buckets are used it
/// keeps only those (12 bytes each), and it turns into a dense HDR histogram (64 KiB and up)
/// once that would be smaller. Requests are spread over up to 10,000 names, and each name's
/// totals hold several histograms per step and outcome, per interval and for the whole run:
/// dense ones cost about a megabyte a name before a request was sent (issue 35). Buckets are
/// the dense histogram's own (its lowest equivalent values), so converting loses nothing and
/// the encoding is the same byte for byte.
#[derive(Clone, Debug, Default)]
pub struct Hist {
    /// The lowest equivalent value of each bucket used, ascending, while sparse.
    values: Vec<u32>,
    /// Their counts.
    counts: Vec<u64>,
    dense: Option<Box<Histogram<u64>>>,
}

/// Buckets a sparse [`Hist`] keeps before it turns dense: 48 KiB, below the 64 KiB of the
/// smallest dense one.
const DENSE_AT: usize = 4096;

/// The lowest value of `v`'s bucket in a histogram of crest's bounds (1 µs, 3 significant
/// digits: 2,048 sub-buckets, so values below 2,048 are exact and each power of two above has
/// 1,024 buckets), as hdrhistogram computes it.
fn lowest_equivalent(v: u64) -> u64 {
    if v < 2048 {
        return v;
    }
    let shift = 63 - v.leading_zeros() - 10;
    (v >> shift) << shift
}

impl Hist {
    /// An empty one: three empty vectors, no allocation.
    pub fn new() -> Self {
        Hist::default()
    }

    /// Records a duration in microseconds, clamped to the histogram's range.
    pub fn record(&mut self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(MAX_MICROS).clamp(1, MAX_MICROS);
        self.put(us, 1);
    }

    /// Records a byte count, clamped to the histogram's range.
    pub fn record_bytes(&mut self, bytes: u64) {
        self.put(bytes.clamp(1, MAX_MICROS), 1);
    }

    /// Records `n` of a value within bounds.
    fn put(&mut self, v: u64, n: u64) {
        if let Some(d) = &mut self.dense {
            put(d, v, n);
            return;
        }
        // Within bounds, MAX_MICROS < u32::MAX.
        let key = lowest_equivalent(v) as u32;
        match self.values.binary_search(&key) {
            Ok(i) => self.counts[i] = self.counts[i].saturating_add(n),
            Err(i) => {
                self.values.insert(i, key);
                self.counts.insert(i, n);
                if self.values.len() > DENSE_AT {
                    let d = self.build();
                    self.values = Vec::new();
                    self.counts = Vec::new();
                    self.dense = Some(Box::new(d));
                }
            }
        }
    }

    fn build(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        for (&v, &n) in self.values.iter().zip(&self.counts) {
            put(&mut h, u64::from(v), n);
        }
        h
    }

    /// Adds another.
    pub fn add(&mut self, o: &Hist) {
        match &o.dense {
            Some(d) => self.add_histogram(d),
            None => {
                for (&v, &n) in o.values.iter().zip(&o.counts) {
                    self.put(u64::from(v), n);
                }
            }
        }
    }

    /// Adds a dense histogram (a decoded one, say); values beyond crest's bounds are clamped.
    pub fn add_histogram(&mut self, h: &Histogram<u64>) {
        if let Some(d) = &mut self.dense {
            add(d, h);
            return;
        }
        for v in h.iter_recorded() {
            self.put(v.value_iterated_to().clamp(1, MAX_MICROS), v.count_at_value());
        }
    }

    /// Adds an encoded histogram, as a journal holds it.
    pub fn add_encoded(&mut self, e: &EncodedHistogram) -> Result<(), HistError> {
        self.add_histogram(&e.decode()?);
        Ok(())
    }

    /// Values recorded.
    pub fn len(&self) -> u64 {
        match &self.dense {
            Some(d) => d.len(),
            None => self.counts.iter().fold(0, |a, &n| a.saturating_add(n)),
        }
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// As a dense histogram, for figures and merging.
    pub fn histogram(&self) -> std::borrow::Cow<'_, Histogram<u64>> {
        match &self.dense {
            Some(d) => std::borrow::Cow::Borrowed(d),
            None => std::borrow::Cow::Owned(self.build()),
        }
    }

    /// Adds it into a dense histogram.
    pub fn add_into(&self, into: &mut Histogram<u64>) {
        match &self.dense {
            Some(d) => add(into, d),
            None => {
                for (&v, &n) in self.values.iter().zip(&self.counts) {
                    put(into, u64::from(v), n);
                }
            }
        }
    }

    /// Encoded as the results document holds it, the same as its dense histogram's encoding.
    pub fn encode(&self) -> EncodedHistogram {
        EncodedHistogram::encode(&self.histogram())
    }

    /// Heap bytes it holds, for tests of what names cost.
    pub fn heap_bytes(&self) -> usize {
        match &self.dense {
            Some(d) => d.distinct_values() * 8,
            None => self.values.capacity() * 4 + self.counts.capacity() * 8,
        }
    }
}

/// A histogram could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum HistError {
    /// The text is not valid base64.
    #[error("histogram is not valid base64")]
    Base64(#[from] base64::DecodeError),
    /// Its header declares more than a histogram of crest's holds: decoding would allocate
    /// what it declares before reading a count.
    #[error("histogram declares {0}, more than any of crest's holds")]
    TooLarge(String),
    /// The bytes are not an HdrHistogram V2 encoding.
    #[error("histogram could not be decoded: {0:?}")]
    Decode(hdrhistogram::serialization::DeserializeError),
}

/// A histogram in HdrHistogram's V2 deflate format, base64-encoded.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct EncodedHistogram(#[schemars(regex(pattern = r"^[A-Za-z0-9+/]*={0,2}$"))] pub String);

impl EncodedHistogram {
    /// Encodes a histogram.
    pub fn encode(h: &Histogram<u64>) -> Self {
        let mut bytes = Vec::new();
        // Serializing into a Vec only fails on I/O errors, which a Vec never raises.
        V2DeflateSerializer::new()
            .serialize(h, &mut bytes)
            .expect("serializing a histogram into memory cannot fail");
        EncodedHistogram(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// Decodes the histogram.
    pub fn decode(&self) -> Result<Histogram<u64>, HistError> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(&self.0)?;
        check_header(&bytes)?;
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(HistError::Decode)?;
        // Decoded histograms keep the bounds they were written with; make them growable so that
        // merging histograms from different writers never fails.
        h.auto(true);
        Ok(h)
    }
}

/// The most counts' bytes a histogram may declare. One of crest's, at three digits up to an hour,
/// has about 45,000 counters, at most 9 bytes each once encoded.
const MAX_PAYLOAD: u32 = 1 << 20;
/// The most significant digits a histogram may declare: crest's have 3; each more multiplies
/// the counters by ten.
const MAX_DIGITS: u32 = 3;
/// HdrHistogram's V2 cookie of a deflated encoding.
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;

/// Refuses an encoding whose header declares a payload or a precision beyond crest's, which
/// the decoder would allocate before reading a byte of it (a 1 KB document declaring 2 GiB).
fn check_header(bytes: &[u8]) -> Result<(), HistError> {
    use std::io::Read;
    let word = |b: &[u8], at: usize| b.get(at..at + 4).map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    let mut inner = [0u8; 16];
    let header: &[u8] = match word(bytes, 0) {
        Some(V2_DEFLATE_COOKIE) => {
            // The inner header is the first bytes of the deflated stream.
            let mut z = flate2::read::ZlibDecoder::new(bytes.get(8..).unwrap_or_default());
            if z.read_exact(&mut inner).is_err() {
                return Ok(()); // left to the decoder to describe
            }
            &inner
        }
        _ => bytes,
    };
    let (Some(payload), Some(digits)) = (word(header, 4), word(header, 12)) else {
        return Ok(());
    };
    if payload > MAX_PAYLOAD {
        return Err(HistError::TooLarge(format!("a payload of {payload} bytes")));
    }
    if digits > MAX_DIGITS {
        return Err(HistError::TooLarge(format!("{digits} significant digits")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips() {
        let mut h = new_histogram();
        for ms in [1u64, 2, 3, 20, 20, 20, 2000] {
            record(&mut h, Duration::from_millis(ms));
        }
        let back = EncodedHistogram::encode(&h).decode().unwrap();
        assert_eq!(back.len(), 7);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(back.max(), h.max());
    }

    #[test]
    fn a_new_histogram_starts_small_and_grows_to_keep_long_values() {
        let hour = Histogram::<u64>::new_with_bounds(1, MAX_MICROS, 3).unwrap();
        let mut h = new_histogram();
        assert!(h.distinct_values() * 2 < hour.distinct_values());
        for d in [
            Duration::from_micros(30),
            Duration::from_secs(2),
            Duration::from_secs(59 * 60),
        ] {
            record(&mut h, d);
        }
        // Growing, not clamping at the starting size: 59 minutes stays 59 minutes.
        assert!(h.equivalent(h.max(), 59 * 60 * 1_000_000), "{}", h.max());
        assert!(h.equivalent(h.value_at_quantile(0.5), 2_000_000));
        let mut into = new_histogram();
        add(&mut into, &h);
        assert_eq!(into.max(), h.max());
        let mut sizes = new_histogram();
        record_bytes(&mut sizes, 5 << 20);
        assert!(sizes.equivalent(sizes.max(), 5 << 20));
    }

    /// A value's bucket as hdrhistogram computes it, for every magnitude in bounds.
    #[test]
    fn buckets_are_the_dense_histograms_own() {
        let h = Histogram::<u64>::new_with_bounds(1, MAX_MICROS, 3).unwrap();
        let mut v = 1u64;
        while v <= MAX_MICROS {
            for x in [v, v + 1, v * 3 / 2, v.saturating_mul(2) - 1] {
                let x = x.min(MAX_MICROS);
                assert_eq!(lowest_equivalent(x), h.lowest_equivalent(x), "{x}");
            }
            v *= 2;
        }
    }

    /// Sparse, turned dense, or added from a decoded histogram: the same bytes as a dense
    /// histogram recording the same values, so results keep their content.
    #[test]
    fn a_sparse_histogram_encodes_as_the_dense_one() {
        let mut dense = new_histogram();
        let mut few = Hist::new();
        for us in [1u64, 7, 2_047, 2_049, 65_536, 1_000_003, 59 * 60 * 1_000_000] {
            record(&mut dense, Duration::from_micros(us));
            few.record(Duration::from_micros(us));
        }
        record_bytes(&mut dense, 5 << 20);
        few.record_bytes(5 << 20);
        assert!(few.dense.is_none());
        assert_eq!(few.len(), 8);
        assert_eq!(few.encode(), EncodedHistogram::encode(&dense));
        assert!(few.heap_bytes() < 1024, "{}", few.heap_bytes());

        // Spread over more buckets than a sparse one keeps, it turns dense on the way.
        let mut many = Hist::new();
        let mut dense = new_histogram();
        for us in (1..20_000u64).map(|i| i * 37) {
            record(&mut dense, Duration::from_micros(us));
            many.record(Duration::from_micros(us));
        }
        assert!(many.dense.is_some());
        assert_eq!(many.encode(), EncodedHistogram::encode(&dense));

        let mut summed = Hist::new();
        summed.add_encoded(&few.encode()).unwrap();
        summed.add(&few);
        let mut twice = few.histogram().into_owned();
        add(&mut twice, &few.histogram());
        assert_eq!(summed.encode(), EncodedHistogram::encode(&twice));
        assert_eq!(summed.len(), 16);
    }

    #[test]
    fn out_of_range_values_are_clamped() {
        let mut h = new_histogram();
        record(&mut h, Duration::from_secs(10_000));
        record(&mut h, Duration::ZERO);
        assert_eq!(h.len(), 2);
        assert!(h.max() >= MAX_MICROS - MAX_MICROS / 1000);
        assert_eq!(h.min(), 1);
    }

    #[test]
    fn a_header_declaring_a_huge_payload_is_refused_before_allocating_it() {
        use std::io::{Read, Write};
        let mut h = new_histogram();
        record(&mut h, Duration::from_millis(3));
        let good = base64::engine::general_purpose::STANDARD
            .decode(&EncodedHistogram::encode(&h).0)
            .unwrap();
        // The inner header as the encoder wrote it, with its payload length made 2 GiB, then
        // with 5 digits.
        let mut inner = Vec::new();
        flate2::read::ZlibDecoder::new(&good[8..])
            .read_to_end(&mut inner)
            .unwrap();
        for (at, value) in [(4, 0x8000_0000u32), (12, 5)] {
            let mut bad = inner.clone();
            bad[at..at + 4].copy_from_slice(&value.to_be_bytes());
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(&bad).unwrap();
            let deflated = z.finish().unwrap();
            let mut doc = good[..4].to_vec();
            doc.extend_from_slice(&(deflated.len() as u32).to_be_bytes());
            doc.extend_from_slice(&deflated);
            let encoded = EncodedHistogram(base64::engine::general_purpose::STANDARD.encode(&doc));
            match encoded.decode() {
                Err(HistError::TooLarge(_)) => {}
                other => panic!("{other:?}"),
            }
            // Plain V2, too.
            let mut plain = bad.clone();
            plain[..4].copy_from_slice(&0x1c84_9313_u32.to_be_bytes());
            let encoded = EncodedHistogram(base64::engine::general_purpose::STANDARD.encode(&plain));
            assert!(matches!(encoded.decode(), Err(HistError::TooLarge(_))));
        }
        assert_eq!(EncodedHistogram::encode(&h).decode().unwrap().len(), 1);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(EncodedHistogram("!!".into()).decode().is_err());
        assert!(EncodedHistogram("AAAA".into()).decode().is_err());
    }
}

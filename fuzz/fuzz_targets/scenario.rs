//! Feeds the scenario loader arbitrary input: it must return a value or an error, never panic.
//! Run with `cargo +nightly fuzz run scenario` from this directory's parent.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crest_scenario::load_str("fuzz.yaml", text, std::path::Path::new("."), &|_| None);
    }
});

//! Memory that scales with what is measured, not with how many request names there could be
//! (issue 35): the documented maximum of 10,000 names runs, in little memory, and counts every
//! request the target served. One test in its own binary, so the peak memory of the children
//! it has waited for is crest's alone.
#![allow(clippy::unwrap_used)]
// getrusage: the child's peak memory as the kernel accounted it.
#![allow(unsafe_code)]

mod common;

/// The largest peak resident memory of the children this process has waited for, in bytes.
fn children_peak_rss() -> u64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a rusage into the pointer given, which is valid and large enough.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, u.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
    // SAFETY: getrusage succeeded, so it filled the struct (zeroed before in any case).
    let u = unsafe { u.assume_init() };
    // Kilobytes on Linux.
    u64::try_from(u.ru_maxrss).unwrap() * 1024
}

#[test]
fn ten_thousand_names_run_in_bounded_memory_and_count_every_request() {
    // The target is not waited for until the end, so it is in no figure read before.
    let target = common::target_process(&["--workers", "64", "--service-time", "1ms", "--queue", "1024"]);
    let url = target.url.trim_end_matches('/');
    let mut text = format!("target: {url}\nflows:\n");
    for i in 0..10_000 {
        text.push_str(&format!(
            "  - name: f{i}\n    steps:\n      - request: {{name: r{i}, path: /r{i}}}\n"
        ));
    }
    // 20,000 iterations of flows chosen at random: about 8,600 of the names occur, most of them
    // in several seconds and on both engine threads. The duration only bounds the run. (A debug
    // build spends most of this test's minutes analysing 10,000 names at the end; that
    // `crest report` rebuilds such a run from its journal is checked on smaller runs.)
    text.push_str("load: {users: 16, duration: 120s, iterations: 20000}\n");
    let (_guard, file) = common::scenario_file(&text);
    assert_eq!(children_peak_rss(), 0, "no child has been waited for yet");

    let r = common::run_scenario(&file, &[], &["--threads", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let peak = children_peak_rss();

    // Before names cost what they measured, this run took over 2 GiB (a histogram of at least
    // 64 KiB for each name's latency, first byte, size and iterations, kept for the whole run,
    // and again per thread for each second the name occurred in).
    assert!(
        peak < 384 << 20,
        "crest's peak memory with 10,000 names: {} MiB",
        peak >> 20
    );

    let results = r.results();
    let names = results["names"].as_array().unwrap();
    assert_eq!(names.len(), 10_000);
    let counted: u64 = results["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["count"].as_u64().unwrap())
        .sum();
    let served = common::target_metric(&target.url, "crest_target_requests_total");
    assert_eq!(counted, 20_000);
    assert_eq!(
        served, counted,
        "the target served {served}, the results count {counted}"
    );
    let occurred: std::collections::BTreeSet<u64> = results["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_u64().unwrap())
        .collect();
    assert!(occurred.len() > 8_000, "{} names occurred", occurred.len());
}

//! Raising the open-file limit so that one process can hold tens of thousands of connections.

use anyhow::{bail, Context, Result};
use rlimit::Resource;

/// File descriptors crest needs beyond one per connection (stdio, runtimes, output files).
pub const HEADROOM: u64 = 64;

/// Raises RLIMIT_NOFILE to the hard limit; returns the new limit.
pub fn raise_file_limit() -> Result<u64> {
    rlimit::increase_nofile_limit(u64::MAX).context("cannot raise the open-file limit (RLIMIT_NOFILE)")
}

/// Raises RLIMIT_NOFILE to the hard limit and checks that `connections` fit under it.
pub fn ensure_file_limit(connections: u64) -> Result<u64> {
    let limit = raise_file_limit()?;
    let (_, hard) = Resource::NOFILE
        .get()
        .context("cannot read the open-file limit (RLIMIT_NOFILE)")?;
    let needed = connections + HEADROOM;
    if needed > limit {
        bail!(
            "-c {connections}: needs about {needed} open files, but the open-file limit (RLIMIT_NOFILE) is {limit} \
             and its hard limit is {hard}; lower -c, or raise the hard limit (e.g. `ulimit -Hn {needed}` as root, \
             or LimitNOFILE= in a systemd unit)"
        );
    }
    Ok(limit)
}

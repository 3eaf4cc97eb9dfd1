//! The per-table maintenance lease: two maintainers (two `SYSTEM MAINTAIN` runs, two
//! `icetrim maintain` processes, two machines) never work on one table at once.
//!
//! The lease lives under the table location, next to the expiry journals:
//! `metadata/.icetrim/maintain-lease-<generation>.json` (the generation zero-padded to 20
//! digits), each file written once with create-if-absent (the write icetrim commits with; atomic
//! on local disk, S3 and Azure) and never overwritten. A file holds the holder's id (host, process
//! id and a random part), when it was acquired and when it expires (ms since the epoch), and the
//! icetrim version.
//!
//! **Who holds the table.** The file of the highest generation decides: its holder owns the table
//! until its `expires-ms`. A released lease is a generation whose `expires-ms` is the release time.
//!
//! **Every change is a new generation.** Acquiring (no lease, or the highest one expired or
//! released), taking over, renewing and releasing all create generation `n + 1` where `n` is the
//! highest listed. Create-if-absent lets exactly one contender create `n + 1`: when the holder
//! renews while another maintainer takes over an expired lease, one of them wins and the other
//! learns it lost (its create finds the file). A holder whose renewal fails this way has lost the
//! table and stops before its next procedure (its commits stand).
//!
//! **The highest generation is never deleted.** The writer of generation `n + 1` deletes the
//! generations below it that it listed (its own older ones and those of crashed holders), never
//! the newest, so a table keeps one small file once its maintainers are done. Hence, at every
//! moment, the highest generation ever created still exists, and generations only grow.
//! Deleting the newest on release would break that: a contender that listed before the release
//! could create a generation number that had been deleted, while another starts over from 1.
//!
//! **Confirmation after the create.** A contender that listed long ago may create a generation
//! that was created, superseded and deleted meanwhile (its create succeeds: the name is free
//! again). So after creating, the contender lists again and holds the table only when no higher
//! generation exists ([`confirm`]); otherwise it lost, and it deletes its file (a higher one
//! exists, so the invariant above stands). Together: at most one maintainer believes it holds a
//! table at any time, as long as the holder's and the contenders' clocks agree within the skew
//! margin below.
//!
//! **Time.** Expiry compares wall clocks of different machines. A holder renews every third of
//! the lease time and trusts its lease only until a third of the lease time before it expires
//! ([`trusted_until`]); a contender takes over only after `expires-ms` by its own clock. So a
//! contender's clock may be up to a third of the lease time ahead of the holder's without two
//! maintainers at once; with more skew the lease can be taken over while the holder still works.
//! Even then no table is harmed: every commit goes through the commit protocol, which refuses a
//! commit whose base moved in a way it cannot prove harmless. A crashed holder delays the table by
//! at most the lease time (its lease expires; the next maintainer takes it over).
//!
//! This file is the pure decision (listings and "now" in, what to do out); [`store`] does the I/O.

pub mod store;

use serde::{Deserialize, Serialize};

/// The format tag of a lease file.
pub const FORMAT: &str = "icetrim-maintain-lease/1";

/// The file-name prefix of a lease below the journal folder.
pub const FILE_PREFIX: &str = "maintain-lease-";

/// The content of one lease generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LeaseRecord {
    pub format: String,
    pub generation: u64,
    /// Who holds it: host, process id and a random part.
    pub holder: String,
    /// When the holder first took the table (kept across renewals), ms since the epoch.
    pub acquired_ms: i64,
    /// When the lease ends, ms since the epoch; the release time for a released lease.
    pub expires_ms: i64,
    pub released: bool,
    pub icetrim_version: String,
}

/// One lease generation found in storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedLease {
    pub generation: u64,
    /// The parsed content; `None` when it could not be read as a lease.
    pub record: Option<LeaseRecord>,
    /// The store's last-modified time, when it said.
    pub last_modified_ms: Option<i64>,
}

/// What a maintainer may do with a table, from the listed leases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseDecision {
    /// Nobody holds the table (no lease, or the newest is released): create `generation`.
    Free { generation: u64 },
    /// The newest lease expired without a release: create `generation` to take it over.
    TakeOver {
        generation: u64,
        previous_holder: String,
    },
    /// Another maintainer holds the table until `until_ms`.
    Held { holder: String, until_ms: i64 },
}

/// The file name of `generation` (sorts by generation).
pub fn file_name(generation: u64) -> String {
    format!("{FILE_PREFIX}{generation:020}.json")
}

/// The generation a file name holds, when it is a lease file.
pub fn generation_of(file_name: &str) -> Option<u64> {
    let digits = file_name.strip_prefix(FILE_PREFIX)?.strip_suffix(".json")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The decision for a maintainer at `now_ms` given every listed generation. A newest lease that
/// cannot be read is held by an unknown maintainer until its last-modified time plus `lease_ms`
/// (or at once taken over when the store gave no time: it cannot be waited out otherwise).
pub fn decide(listed: &[ListedLease], now_ms: i64, lease_ms: i64) -> LeaseDecision {
    let Some(newest) = listed.iter().max_by_key(|l| l.generation) else {
        return LeaseDecision::Free { generation: 1 };
    };
    let generation = newest.generation.saturating_add(1);
    let (holder, until_ms, released) = match &newest.record {
        Some(r) => (r.holder.clone(), r.expires_ms, r.released),
        None => (
            format!("an unreadable lease (generation {})", newest.generation),
            newest
                .last_modified_ms
                .map_or(i64::MIN, |t| t.saturating_add(lease_ms)),
            false,
        ),
    };
    if released {
        return LeaseDecision::Free { generation };
    }
    if now_ms < until_ms {
        return LeaseDecision::Held { holder, until_ms };
    }
    LeaseDecision::TakeOver {
        generation,
        previous_holder: holder,
    }
}

/// Whether the maintainer that created `generation` holds the table, given a listing made after
/// the create: no higher generation exists.
pub fn confirm(listed_after: &[ListedLease], generation: u64) -> bool {
    listed_after.iter().all(|l| l.generation <= generation)
}

/// The generations below `generation` the writer of `generation` deletes.
pub fn superseded(listed: &[ListedLease], generation: u64) -> Vec<u64> {
    let mut old: Vec<u64> = listed
        .iter()
        .map(|l| l.generation)
        .filter(|g| *g < generation)
        .collect();
    old.sort_unstable();
    old.dedup();
    old
}

/// Until when a holder trusts a lease that expires at `expires_ms`: a third of the lease time
/// before it, the margin for clock skew between maintainers (see the module comment).
pub fn trusted_until(expires_ms: i64, lease_ms: i64) -> i64 {
    expires_ms.saturating_sub(lease_ms / 3)
}

/// How often a holder renews: every third of the lease time (at least every 100 ms).
pub fn renew_interval_ms(lease_ms: i64) -> u64 {
    u64::try_from((lease_ms / 3).max(100)).unwrap_or(100)
}

/// A new lease record.
pub fn record(
    generation: u64,
    holder: &str,
    acquired_ms: i64,
    expires_ms: i64,
    released: bool,
) -> LeaseRecord {
    LeaseRecord {
        format: FORMAT.to_string(),
        generation,
        holder: holder.to_string(),
        acquired_ms,
        expires_ms,
        released,
        icetrim_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// This process's holder id: `<host>:<pid>:<random>` (a new random part per call, so two
/// sessions of one process are two holders).
pub fn new_holder_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "unknown-host".to_string());
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{}:{}:{}", host.trim(), std::process::id(), &random[..12])
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

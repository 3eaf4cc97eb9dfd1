//! The maintenance lease around one table's `SYSTEM MAINTAIN` run ([`crate::maintain::lease`]):
//! taken before the first procedure the run finds due, renewed in the background while the
//! procedures run, released at the end (also after a failure or a cancellation).
//!
//! Only a run that can change the table takes it: EXPLAIN and `dry_run = 1` write nothing, so
//! they take no lease (a lease write would be a change) and run beside a maintainer. A table whose
//! policy disables maintenance needs none either. A table whose lease another maintainer holds is
//! skipped, not failed: that maintainer is doing the work.

use chrono::{TimeZone, Utc};

use super::maintain::MaintainRun;
use crate::error::Result;
use crate::maintain::lease::new_holder_id;
use crate::maintain::lease::store::{Acquired, Keeper, acquire};
use crate::maintain::target::MaintenanceTarget;
use crate::maintain::upkeep::UpkeepPolicy;

/// What a table's run does about the lease.
pub(super) enum LeaseTaken {
    /// Held and renewed until [`give_back`].
    Held(Keeper),
    /// Another maintainer holds the table: the reason of the `skipped` row.
    Busy(String),
    /// EXPLAIN, a dry run, or a table with maintenance disabled.
    NotNeeded,
}

/// Take `target`'s lease for `policy`'s lease time, as a new holder.
pub(super) async fn take(
    target: &MaintenanceTarget,
    policy: &UpkeepPolicy,
    run: &MaintainRun,
) -> Result<LeaseTaken> {
    if run.explain || run.dry_run || !policy.enabled() {
        return Ok(LeaseTaken::NotNeeded);
    }
    let holder = new_holder_id();
    let now_ms = Utc::now().timestamp_millis();
    let lease_ms = policy.lease_ms();
    match acquire(&target.io, &target.location, &holder, now_ms, lease_ms).await {
        Ok(Acquired::Held(lease)) => Ok(LeaseTaken::Held(Keeper::start(target.io.clone(), lease))),
        Ok(Acquired::Busy { holder, until_ms }) => {
            Ok(LeaseTaken::Busy(busy_reason(&holder, until_ms)))
        }
        Err(e) => Err(e.context(format!(
            "Cannot take the maintenance lease of {}",
            target.table_name
        ))),
    }
}

/// Why a run that found the table leased skips it.
pub(super) fn busy_reason(holder: &str, until_ms: i64) -> String {
    let until = Utc
        .timestamp_millis_opt(until_ms)
        .single()
        .map_or(until_ms.to_string(), |t| {
            t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
        });
    format!("being maintained by {holder} until {until}")
}

/// Why the run stops before its next procedure, when the lease no longer protects it.
pub(super) fn lost(lease: &LeaseTaken) -> Option<String> {
    match lease {
        LeaseTaken::Held(keeper) => keeper.lost(Utc::now().timestamp_millis()),
        _ => None,
    }
}

/// Release the lease, if held. A failure leaves it to expire (the table waits at most the lease
/// time); it does not fail the run.
pub(super) async fn give_back(lease: LeaseTaken) {
    if let LeaseTaken::Held(keeper) = lease {
        let _ = keeper.release(Utc::now().timestamp_millis()).await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_busy_table_names_its_holder_and_the_time_in_utc() {
        assert_eq!(
            super::busy_reason("h:1:abc", 1_764_676_800_000),
            "being maintained by h:1:abc until 2025-12-02 12:00:00 UTC"
        );
    }
}

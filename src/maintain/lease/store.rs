//! The lease's I/O: listing the generations under a table, creating one with create-if-absent,
//! confirming it, and cleaning up what it superseded ([`super`] decides, this carries it out).
//! [`Keeper`] renews a held lease in the background while a table's procedures run.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::TryStreamExt;

use super::{
    LeaseDecision, LeaseRecord, ListedLease, confirm, decide, file_name, generation_of, record,
    renew_interval_ms, superseded, trusted_until,
};
use crate::error::{Error, ErrorKind, Result};
use crate::io::{FileIO, WriteOutcome};
use crate::maintain::expire::journal::journal_dir;

/// How many times [`acquire`] lists again after losing a create race before it gives up.
const ACQUIRE_ATTEMPTS: usize = 5;

/// A lease this maintainer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLease {
    pub location: String,
    pub holder: String,
    pub generation: u64,
    pub acquired_ms: i64,
    pub expires_ms: i64,
    pub lease_ms: i64,
}

/// The outcome of [`acquire`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    Held(HeldLease),
    /// Another maintainer holds the table until `until_ms`.
    Busy {
        holder: String,
        until_ms: i64,
    },
}

/// The URI of `generation` under the table at `location`.
pub fn lease_uri(location: &str, generation: u64) -> String {
    format!("{}/{}", journal_dir(location), file_name(generation))
}

/// Every lease generation under the table at `location` (a file that is no lease is ignored; one
/// that cannot be parsed is listed without a record).
pub async fn list(io: &FileIO, location: &str) -> Result<Vec<ListedLease>> {
    let dir = journal_dir(location);
    let files: Vec<_> = match io.list(&dir).try_collect().await {
        Ok(files) => files,
        Err(e) if e.kind() == ErrorKind::FileDoesntExist => Vec::new(),
        Err(e) => return Err(e.context("Cannot list the maintenance leases")),
    };
    let mut listed = Vec::new();
    for file in files {
        let name = file.uri.rsplit('/').next().unwrap_or_default();
        let Some(generation) = generation_of(name) else {
            continue;
        };
        let bytes = match io.read(&file.uri).await {
            Ok(bytes) => bytes,
            // Superseded and removed between the listing and the read.
            Err(e) if e.kind() == ErrorKind::FileDoesntExist => continue,
            Err(e) => return Err(e),
        };
        let record = serde_json::from_slice::<LeaseRecord>(&bytes)
            .ok()
            .filter(|r| r.format == super::FORMAT && r.generation == generation);
        listed.push(ListedLease {
            generation,
            record,
            last_modified_ms: file.last_modified_ms,
        });
    }
    listed.sort_by_key(|l| l.generation);
    Ok(listed)
}

/// Create `record`'s generation if absent; `true` when this call created it.
async fn create(io: &FileIO, location: &str, record: &LeaseRecord) -> Result<bool> {
    let uri = lease_uri(location, record.generation);
    let bytes = serde_json::to_vec_pretty(record)
        .map_err(|e| Error::logical(format!("cannot encode the maintenance lease: {e}")))?;
    Ok(io.write_if_absent(&uri, Bytes::from(bytes)).await? == WriteOutcome::Created)
}

/// After creating `generation`: whether it is the newest (then the generations it superseded are
/// removed, best effort); when it is not, it is removed (a newer one exists).
async fn confirm_created(io: &FileIO, location: &str, generation: u64) -> Result<bool> {
    let after = list(io, location).await?;
    if !confirm(&after, generation) {
        let _ = io.delete(&lease_uri(location, generation)).await;
        return Ok(false);
    }
    for old in superseded(&after, generation) {
        // A leftover generation only costs a listing entry; the next writer removes it.
        let _ = io.delete(&lease_uri(location, old)).await;
    }
    Ok(true)
}

/// Take the lease of the table at `location` for `lease_ms` as `holder`, at `now_ms`.
pub async fn acquire(
    io: &FileIO,
    location: &str,
    holder: &str,
    now_ms: i64,
    lease_ms: i64,
) -> Result<Acquired> {
    for _ in 0..ACQUIRE_ATTEMPTS {
        let generation = match decide(&list(io, location).await?, now_ms, lease_ms) {
            LeaseDecision::Held { holder, until_ms } => {
                return Ok(Acquired::Busy { holder, until_ms });
            }
            LeaseDecision::Free { generation } | LeaseDecision::TakeOver { generation, .. } => {
                generation
            }
        };
        let expires_ms = now_ms.saturating_add(lease_ms);
        let mine = record(generation, holder, now_ms, expires_ms, false);
        if create(io, location, &mine).await? && confirm_created(io, location, generation).await? {
            return Ok(Acquired::Held(HeldLease {
                location: location.to_string(),
                holder: holder.to_string(),
                generation,
                acquired_ms: now_ms,
                expires_ms,
                lease_ms,
            }));
        }
        // Another maintainer created that generation first: look again.
    }
    // Still racing after several rounds: another maintainer is taking the table right now.
    let listed = list(io, location).await?;
    let newest = listed.iter().rev().find_map(|l| l.record.clone());
    Ok(Acquired::Busy {
        holder: newest
            .as_ref()
            .map_or("another maintainer".into(), |r| r.holder.clone()),
        until_ms: newest.map_or(now_ms.saturating_add(lease_ms), |r| r.expires_ms),
    })
}

/// Renew `lease` at `now_ms`: the next generation, by the same holder, expiring a lease time from
/// now. `Ok(false)` when the lease was lost (another maintainer created that generation, or a
/// newer one exists: then the lost generation is removed, a newer one standing); `lease` is
/// updated when renewed.
pub async fn renew(io: &FileIO, lease: &mut HeldLease, now_ms: i64) -> Result<bool> {
    let generation = lease.generation.saturating_add(1);
    let expires_ms = now_ms.saturating_add(lease.lease_ms);
    let next = record(
        generation,
        &lease.holder,
        lease.acquired_ms,
        expires_ms,
        false,
    );
    if !create(io, &lease.location, &next).await?
        || !confirm_created(io, &lease.location, generation).await?
    {
        // Lost: a newer generation stands, so the one this holder had can go.
        let _ = io
            .delete(&lease_uri(&lease.location, lease.generation))
            .await;
        return Ok(false);
    }
    lease.generation = generation;
    lease.expires_ms = expires_ms;
    Ok(true)
}

/// Release `lease` at `now_ms`: the next generation, released (the newest file is never deleted;
/// see the module comment of [`super`]), then the generation it replaces is removed.
pub async fn release(io: &FileIO, lease: &HeldLease, now_ms: i64) -> Result<()> {
    let generation = lease.generation.saturating_add(1);
    let released = record(generation, &lease.holder, lease.acquired_ms, now_ms, true);
    if create(io, &lease.location, &released).await? {
        confirm_created(io, &lease.location, generation).await?;
    }
    Ok(())
}

/// What a [`Keeper`] knows of its lease.
#[derive(Debug)]
struct KeeperState {
    lease: HeldLease,
    /// Why the lease was lost, once it was.
    lost: Option<String>,
}

/// A held lease renewed in the background every third of the lease time until [`Keeper::release`].
pub struct Keeper {
    io: FileIO,
    state: Arc<Mutex<KeeperState>>,
    task: tokio::task::JoinHandle<()>,
}

impl Keeper {
    /// Start renewing `lease` (on the current Tokio runtime).
    pub fn start(io: FileIO, lease: HeldLease) -> Keeper {
        let interval = std::time::Duration::from_millis(renew_interval_ms(lease.lease_ms));
        let state = Arc::new(Mutex::new(KeeperState { lease, lost: None }));
        let task = tokio::spawn(renew_loop(io.clone(), state.clone(), interval));
        Keeper { io, state, task }
    }

    /// Why the lease no longer protects the work, if it does not: a renewal found a newer
    /// generation, or the lease could not be renewed before the skew margin ([`trusted_until`]).
    pub fn lost(&self, now_ms: i64) -> Option<String> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lost) = &state.lost {
            return Some(lost.clone());
        }
        let until = trusted_until(state.lease.expires_ms, state.lease.lease_ms);
        (now_ms >= until).then(|| {
            "the maintenance lease could not be renewed in time (another maintainer may take \
             the table over)"
                .to_string()
        })
    }

    /// Stop renewing and release the lease (unless it was lost).
    pub async fn release(self, now_ms: i64) -> Result<()> {
        self.task.abort();
        // Wait for an aborted renewal to end, so the release is the newest generation's writer.
        while !self.task.is_finished() {
            tokio::task::yield_now().await;
        }
        let (lease, lost) = {
            let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            (state.lease.clone(), state.lost.is_some())
        };
        if lost {
            return Ok(());
        }
        release(&self.io, &lease, now_ms).await
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn renew_loop(io: FileIO, state: Arc<Mutex<KeeperState>>, interval: std::time::Duration) {
    loop {
        tokio::time::sleep(interval).await;
        let mut lease = {
            let state = state.lock().unwrap_or_else(|e| e.into_inner());
            state.lease.clone()
        };
        let now_ms = chrono::Utc::now().timestamp_millis();
        // A storage error leaves the lease as it was: the next tick tries again, and the
        // holder stops trusting it at the skew margin.
        let Ok(renewed) = renew(&io, &mut lease, now_ms).await else {
            continue;
        };
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        if renewed {
            state.lease = lease;
        } else {
            state.lost = Some(
                "the maintenance lease was taken over by another maintainer (a newer \
                 generation exists)"
                    .to_string(),
            );
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: i64 = 60_000;

    /// The generations listed under `loc`, in listing order.
    async fn generations(io: &FileIO, loc: &str) -> Vec<u64> {
        let listed = list(io, loc).await.unwrap();
        listed.iter().map(|l| l.generation).collect()
    }

    #[tokio::test]
    async fn acquire_renew_release_and_take_over_in_memory() {
        let io = FileIO::memory();
        let loc = "memory:///t";
        let Acquired::Held(mut a) = acquire(&io, loc, "a", 1_000, L).await.unwrap() else {
            panic!("free table")
        };
        assert_eq!(a.generation, 1);
        assert_eq!(
            acquire(&io, loc, "b", 2_000, L).await.unwrap(),
            Acquired::Busy {
                holder: "a".into(),
                until_ms: 1_000 + L
            }
        );
        assert!(renew(&io, &mut a, 5_000).await.unwrap());
        assert_eq!((a.generation, a.expires_ms), (2, 5_000 + L));
        let gens = generations(&io, loc).await;
        assert_eq!(
            gens,
            [2],
            "the renewal removed the generation it superseded"
        );
        // Expired: b takes over with generation 3; a's renewal then finds it lost.
        let Acquired::Held(b) = acquire(&io, loc, "b", 5_000 + L, L).await.unwrap() else {
            panic!("expired lease is taken over")
        };
        assert_eq!(b.generation, 3);
        assert!(!renew(&io, &mut a, 5_000 + L + 1).await.unwrap());
        release(&io, &b, 6_000 + L).await.unwrap();
        let listed = list(&io, loc).await.unwrap();
        assert_eq!(listed.len(), 1, "one released generation stays");
        assert!(listed[0].record.as_ref().unwrap().released);
        assert!(matches!(
            acquire(&io, loc, "c", 6_001 + L, L).await.unwrap(),
            Acquired::Held(HeldLease { generation: 5, .. })
        ));
    }

    #[tokio::test]
    async fn a_stale_create_of_a_deleted_generation_is_not_confirmed() {
        let io = FileIO::memory();
        let loc = "memory:///t";
        let Acquired::Held(mut a) = acquire(&io, loc, "a", 0, L).await.unwrap() else {
            panic!()
        };
        assert!(renew(&io, &mut a, 1).await.unwrap());
        // Generation 1 was deleted by the renewal; a contender that decided long ago creates it.
        let stale = record(1, "late", 2, 2 + L, false);
        assert!(create(&io, loc, &stale).await.unwrap());
        assert!(!confirm_created(&io, loc, 1).await.unwrap());
        let gens = generations(&io, loc).await;
        assert_eq!(gens, [2], "the stale generation removed itself");
    }
}

//! The plan of a generated history: which event makes each snapshot (a main operation drawn from
//! the mix, a commit on a branch, or a staged snapshot), which main snapshots get a tag or a
//! statistics file, and the retention of each ref. Drawn from the seeded RNG before anything is
//! written; the first snapshot is always a main append.

use std::collections::BTreeSet;

use rand::Rng;
use rand::rngs::StdRng;

use super::{GenerateOptions, MainOp};
use crate::iceberg::txn::refs::Retention;

const DAY_MS: i64 = 86_400_000;

/// What makes one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    Main(MainOp),
    /// A commit on branch `b` (forked from main at its first commit).
    Branch(usize),
    Staged,
}

#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    pub events: Vec<Event>,
    /// Event indexes (main events) that get a tag, with the tag's `max-ref-age-ms`.
    pub tags: Vec<(usize, Option<i64>)>,
    /// Main event indexes that get a statistics file.
    pub statistics: BTreeSet<usize>,
    pub branch_retention: Vec<Retention>,
}

fn some_days(rng: &mut StdRng, p: f64, max_days: i64) -> Option<i64> {
    rng.random_bool(p)
        .then(|| rng.random_range(1..=max_days) * DAY_MS)
}

pub(crate) fn plan(opts: &GenerateOptions, rng: &mut StdRng) -> Schedule {
    let n = opts.snapshots;
    let special = opts.branches * opts.branch_commits + opts.staged;
    let slots: Vec<usize> = rand::seq::index::sample(rng, n - 1, special)
        .into_iter()
        .map(|i| i + 1)
        .collect();
    let mut events = vec![Event::Main(MainOp::Append); n];
    let mut slots = slots.into_iter();
    for b in 0..opts.branches {
        for _ in 0..opts.branch_commits {
            if let Some(i) = slots.next() {
                events[i] = Event::Branch(b);
            }
        }
    }
    for i in slots {
        events[i] = Event::Staged;
    }
    let weights = opts.mix.weights();
    let total: u32 = weights.iter().map(|(_, w)| w).sum();
    let mut script = opts.script.iter();
    for (i, e) in events.iter_mut().enumerate() {
        let Event::Main(op) = e else { continue };
        if let Some(scripted) = script.next() {
            *op = *scripted;
        } else if i > 0 {
            let mut draw = rng.random_range(0..total.max(1));
            for (candidate, w) in weights {
                if draw < w {
                    *op = candidate;
                    break;
                }
                draw -= w;
            }
        }
    }
    let mains: Vec<usize> = (0..n)
        .filter(|&i| matches!(events[i], Event::Main(_)))
        .collect();
    let pick = |rng: &mut StdRng, k: usize| -> Vec<usize> {
        let mut v: Vec<usize> = rand::seq::index::sample(rng, mains.len(), k.min(mains.len()))
            .into_iter()
            .map(|i| mains[i])
            .collect();
        v.sort_unstable();
        v
    };
    let tag_points = pick(rng, opts.tags);
    let tags = tag_points
        .into_iter()
        .map(|i| (i, some_days(rng, 0.5, 30)))
        .collect();
    let statistics = pick(rng, opts.statistics).into_iter().collect();
    let branch_retention = (0..opts.branches)
        .map(|_| {
            opts.branch_retention.unwrap_or_else(|| Retention {
                min_snapshots_to_keep: rng.random_bool(0.5).then(|| rng.random_range(1..=5)),
                max_snapshot_age_ms: some_days(rng, 0.5, 10),
                max_ref_age_ms: some_days(rng, 0.3, 30),
            })
        })
        .collect();
    Schedule {
        events,
        tags,
        statistics,
        branch_retention,
    }
}

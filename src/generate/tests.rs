//! Options, mix parsing and the schedule.

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::schedule::{Event, plan};
use super::*;

#[test]
fn mix_parses_and_rejects() {
    let mix = Mix::parse("append=1, delete=3").unwrap();
    assert_eq!((mix.append, mix.delete, mix.merge), (1, 3, 0));
    assert!(Mix::parse("append=0").is_err());
    assert!(Mix::parse("grow=1").is_err());
    assert!(Mix::parse("append").is_err());
    assert!(Mix::parse("append=x").is_err());
}

#[test]
fn schedule_places_every_event_deterministically() {
    let mut o = GenerateOptions::new("memory://t", FormatVersion::V2, 40, 2, 3, 0);
    o.branches = 3;
    o.staged = 4;
    o.tags = 5;
    o.statistics = 2;
    let a = plan(&o, &mut StdRng::seed_from_u64(3));
    let b = plan(&o, &mut StdRng::seed_from_u64(3));
    assert_eq!(a.events, b.events);
    assert_eq!(a.events[0], Event::Main(MainOp::Append));
    let count = |f: &dyn Fn(&Event) -> bool| a.events.iter().filter(|e| f(e)).count();
    assert_eq!(
        count(&|e| matches!(e, Event::Branch(_))),
        3 * o.branch_commits
    );
    assert_eq!(count(&|e| matches!(e, Event::Staged)), 4);
    assert_eq!(a.tags.len(), 5);
    assert!(
        a.tags
            .iter()
            .all(|(i, _)| matches!(a.events[*i], Event::Main(_)))
    );
    assert_eq!(a.statistics.len(), 2);
}

#[test]
fn options_are_validated() {
    let mut o = GenerateOptions::new("memory://t", FormatVersion::V2, 4, 1, 0, 0);
    o.branches = 2;
    assert!(
        validate(&o).is_err(),
        "4 branch commits leave no main snapshot"
    );
    let mut o = GenerateOptions::new("memory://t", FormatVersion::V2, 4, 0, 0, 0);
    assert!(validate(&o).is_err());
    o.files_per_snapshot = 1;
    o.tags = 5;
    assert!(validate(&o).is_err());
}

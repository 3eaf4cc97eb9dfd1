use super::*;
use proptest::prelude::*;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn defaults_and_their_source() {
    let policy = effective_upkeep(&PolicyLayers::default()).unwrap();
    assert!(policy.enabled());
    assert!(!policy.orphans_enabled());
    assert!(!policy.force());
    assert_eq!(policy.compact_min_input_files(), 5);
    assert_eq!(policy.manifests_min_count(), 100);
    assert_eq!(policy.orphans_older_than_ms(), 259_200_000);
    assert!(policy.knobs.iter().all(|k| k.source == KnobSource::Default));
    assert!(!policy.gc_disabled);
}

#[test]
fn statement_beats_property_beats_database_beats_session() {
    let statement = map(&[("iceberg_maintain_compact_min_input_files", "2")]);
    let properties = map(&[
        ("icetrim.maintain.compact.min-input-files", "3"),
        ("icetrim.maintain.manifests.min-count", "7"),
    ]);
    let database = map(&[
        ("iceberg_maintain_compact_min_input_files", "4"),
        ("iceberg_maintain_manifests_min_count", "8"),
        ("iceberg_maintain_orphans_enabled", "1"),
    ]);
    let session = map(&[
        ("iceberg_maintain_orphans_enabled", "0"),
        ("iceberg_maintain_force", "1"),
    ]);
    let layers = PolicyLayers {
        statement: Some(&statement),
        properties: Some(&properties),
        database: Some(("lake", &database)),
        session: Some(&session),
    };
    let policy = effective_upkeep(&layers).unwrap();
    assert_eq!(policy.compact_min_input_files(), 2);
    assert_eq!(policy.manifests_min_count(), 7);
    assert!(policy.orphans_enabled());
    assert!(policy.force());
    let sources: Vec<&KnobSource> = policy.knobs.iter().map(|k| &k.source).collect();
    assert_eq!(
        sources,
        vec![
            &KnobSource::Default,
            &KnobSource::Statement,
            &KnobSource::Property,
            &KnobSource::Default,
            &KnobSource::Database("lake".into()),
            &KnobSource::Default,
            &KnobSource::Session,
            &KnobSource::Default,
        ]
    );
    let text: Vec<String> = policy.knobs.iter().map(Knob::describe).collect();
    let text = text.join(", ");
    assert!(
        text.contains(
            "iceberg_maintain_manifests_min_count=7 (table property \
             icetrim.maintain.manifests.min-count)"
        ),
        "{text}"
    );
    assert!(text.contains("(database lake setting iceberg_maintain_orphans_enabled)"));
}

#[test]
fn orphans_floor_is_24_hours_when_enabled() {
    let properties = map(&[
        ("icetrim.maintain.orphans.enabled", "true"),
        ("icetrim.maintain.orphans.older-than-ms", "86399999"),
    ]);
    let layers = PolicyLayers {
        properties: Some(&properties),
        ..Default::default()
    };
    let err = effective_upkeep(&layers).unwrap_err();
    assert_eq!(err.code(), 36, "{err}");
    assert!(err.to_string().contains("at least 24 hours"), "{err}");
    // Exactly 24 hours passes; so does a short threshold while orphan removal is off.
    let ok = map(&[
        ("icetrim.maintain.orphans.enabled", "1"),
        ("icetrim.maintain.orphans.older-than-ms", "86400000"),
    ]);
    let layers = PolicyLayers {
        properties: Some(&ok),
        ..Default::default()
    };
    assert_eq!(
        effective_upkeep(&layers).unwrap().orphans_older_than_ms(),
        86_400_000
    );
    let off = map(&[("icetrim.maintain.orphans.older-than-ms", "5")]);
    let layers = PolicyLayers {
        properties: Some(&off),
        ..Default::default()
    };
    assert!(effective_upkeep(&layers).is_ok());
}

#[test]
fn bad_values_name_where_they_were_written() {
    let properties = map(&[("icetrim.maintain.enabled", "yes")]);
    let layers = PolicyLayers {
        properties: Some(&properties),
        ..Default::default()
    };
    let err = effective_upkeep(&layers).unwrap_err();
    assert_eq!(err.code(), 36);
    assert!(
        err.to_string().contains("icetrim.maintain.enabled"),
        "{err}"
    );
    let statement = map(&[("iceberg_maintain_manifests_min_count", "-1")]);
    let layers = PolicyLayers {
        statement: Some(&statement),
        ..Default::default()
    };
    let err = effective_upkeep(&layers).unwrap_err();
    assert!(
        err.to_string()
            .contains("iceberg_maintain_manifests_min_count must be a non-negative integer"),
        "{err}"
    );
}

#[test]
fn gc_disabled_skips_every_procedure_that_deletes() {
    let properties = map(&[
        ("gc.enabled", "false"),
        ("icetrim.maintain.orphans.enabled", "1"),
    ]);
    let layers = PolicyLayers {
        properties: Some(&properties),
        ..Default::default()
    };
    let policy = effective_upkeep(&layers).unwrap();
    assert!(policy.gc_disabled);
    for procedure in UpkeepProcedure::ORDER {
        let verdict = gate(&policy, procedure, None);
        if procedure.deletes() {
            assert!(
                matches!(&verdict, Gate::Skipped(r) if r.contains("gc.enabled = false")),
                "{procedure:?}: {verdict:?}"
            );
        } else {
            assert_eq!(verdict, Gate::Plan, "{procedure:?}");
        }
    }
}

#[test]
fn catalog_maintained_tables_are_skipped_unless_forced() {
    let policy = effective_upkeep(&PolicyLayers::default()).unwrap();
    let verdict = gate(&policy, UpkeepProcedure::Compact, Some("S3 Tables"));
    assert!(matches!(verdict, Gate::Skipped(r) if r.starts_with("maintained by S3 Tables")));
    let statement = map(&[("iceberg_maintain_force", "1")]);
    let forced = effective_upkeep(&PolicyLayers {
        statement: Some(&statement),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        gate(&forced, UpkeepProcedure::Compact, Some("S3 Tables")),
        Gate::Plan
    );
    assert!(matches!(
        gate(&forced, UpkeepProcedure::Orphans, None),
        Gate::Disabled(_)
    ));
}

fn layer() -> impl Strategy<Value = Option<u64>> {
    prop::option::of(0u64..1000)
}

proptest! {
    /// The highest layer that names a knob decides its value and source; a knob no layer names
    /// has its default.
    #[test]
    fn highest_layer_wins(s in layer(), p in layer(), d in layer(), x in layer()) {
        let def = COMPACT_MIN_INPUT_FILES;
        let one = |v: Option<u64>, key: &str| {
            v.map(|v| map(&[(key, &v.to_string())])).unwrap_or_default()
        };
        let (statement, properties) = (one(s, def.setting), one(p, def.property));
        let (database, session) = (one(d, def.setting), one(x, def.setting));
        let layers = PolicyLayers {
            statement: Some(&statement),
            properties: Some(&properties),
            database: Some(("db", &database)),
            session: Some(&session),
        };
        let policy = effective_upkeep(&layers).unwrap();
        let knob = policy.knob(&def);
        let expected = [
            (s, KnobSource::Statement),
            (p, KnobSource::Property),
            (d, KnobSource::Database("db".into())),
            (x, KnobSource::Session),
        ]
        .into_iter()
        .find_map(|(v, src)| v.map(|v| (v, src)))
        .unwrap_or((def.default, KnobSource::Default));
        prop_assert_eq!((knob.value, knob.source.clone()), expected);
    }

    /// With orphan removal on, any threshold under 24 hours is refused and any at or above is
    /// taken as given.
    #[test]
    fn orphans_floor(ms in 0u64..200_000_000) {
        let properties = map(&[
            ("icetrim.maintain.orphans.enabled", "1"),
            ("icetrim.maintain.orphans.older-than-ms", &ms.to_string()),
        ]);
        let result = effective_upkeep(&PolicyLayers { properties: Some(&properties), ..Default::default() });
        if ms < 86_400_000 {
            prop_assert!(result.is_err());
        } else {
            prop_assert_eq!(result.unwrap().orphans_older_than_ms(), ms as i64);
        }
    }

    /// gc.enabled = false never lets a deleting procedure plan, whatever else is set.
    #[test]
    fn gc_disabled_never_deletes(orphans in any::<bool>(), force in any::<bool>()) {
        let properties = map(&[
            ("gc.enabled", "false"),
            ("icetrim.maintain.orphans.enabled", if orphans { "1" } else { "0" }),
            ("icetrim.maintain.force", if force { "1" } else { "0" }),
        ]);
        let policy = effective_upkeep(&PolicyLayers { properties: Some(&properties), ..Default::default() }).unwrap();
        for procedure in [UpkeepProcedure::Expire, UpkeepProcedure::Orphans] {
            prop_assert_ne!(gate(&policy, procedure, None), Gate::Plan);
            prop_assert_ne!(gate(&policy, procedure, Some("S3 Tables")), Gate::Plan);
        }
    }
}

#[test]
fn the_lease_time_is_a_knob_of_at_least_one_second() {
    let policy = effective_upkeep(&PolicyLayers::default()).unwrap();
    assert_eq!(policy.lease_ms(), 600_000);
    let properties = map(&[("icetrim.maintain.lease-seconds", "30")]);
    let layers = PolicyLayers {
        properties: Some(&properties),
        ..Default::default()
    };
    assert_eq!(effective_upkeep(&layers).unwrap().lease_ms(), 30_000);
    let zero = map(&[("iceberg_maintain_lease_seconds", "0")]);
    let layers = PolicyLayers {
        statement: Some(&zero),
        ..Default::default()
    };
    let error = effective_upkeep(&layers).unwrap_err();
    assert_eq!(error.kind(), crate::error::ErrorKind::BadArguments);
    assert!(error.message().contains("at least 1 second"), "{error}");
}

#[test]
fn every_knob_is_a_session_setting_with_the_same_default() {
    let settings = crate::settings::Settings::new();
    for knob in KNOBS {
        let text = settings
            .get_text(knob.setting)
            .unwrap_or_else(|| panic!("{} is not a session setting", knob.setting));
        assert_eq!(text, knob.default.to_string(), "{}", knob.setting);
    }
}

#[test]
fn s3_tables_is_recognised_by_endpoint_or_warehouse() {
    let url = |u: &str| vec![u.to_string()];
    let endpoint = url("https://s3tables.us-east-1.amazonaws.com/iceberg");
    assert_eq!(catalog_maintainer(&endpoint, None), Some("S3 Tables"));
    let arn = "arn:aws:s3tables:us-east-1:111122223333:bucket/lake".to_string();
    let rest = url("http://127.0.0.1:8181");
    assert_eq!(catalog_maintainer(&rest, Some(&arn)), Some("S3 Tables"));
    assert_eq!(
        catalog_maintainer(&rest, Some(&"s3://wh".to_string())),
        None
    );
    assert_eq!(catalog_maintainer(&[], None), None);
}

#[test]
fn a_catalogs_own_maintenance_takes_its_procedures_only() {
    use crate::catalog::{OwnMaintenance, OwnMaintenanceKind};
    let own = [
        OwnMaintenance {
            kind: OwnMaintenanceKind::Compaction,
            by: "the Glue compaction optimizer",
        },
        OwnMaintenance {
            kind: OwnMaintenanceKind::OrphanFiles,
            by: "the Glue orphan file deletion optimizer",
        },
    ];
    let by = |p| maintainer_of(p, None, &own);
    assert_eq!(
        by(UpkeepProcedure::Compact),
        Some("the Glue compaction optimizer")
    );
    assert_eq!(
        by(UpkeepProcedure::Orphans),
        Some("the Glue orphan file deletion optimizer")
    );
    assert_eq!(by(UpkeepProcedure::Expire), None);
    assert_eq!(by(UpkeepProcedure::RewriteManifests), None);
    // A catalog that maintains the whole table takes every procedure.
    for p in UpkeepProcedure::ORDER {
        assert_eq!(maintainer_of(p, Some("S3 Tables"), &[]), Some("S3 Tables"));
        assert_eq!(maintainer_of(p, None, &[]), None);
    }
    // The gate skips what another maintains, unless forced.
    let policy = effective_upkeep(&PolicyLayers::default()).unwrap();
    let gate_of = gate(
        &policy,
        UpkeepProcedure::Compact,
        by(UpkeepProcedure::Compact),
    );
    assert_eq!(
        gate_of,
        Gate::Skipped(
            "maintained by the Glue compaction optimizer (set iceberg_maintain_force = 1 to \
             maintain it anyway)"
                .to_string()
        )
    );
    let forced = map(&[("iceberg_maintain_force", "1")]);
    let policy = effective_upkeep(&PolicyLayers {
        statement: Some(&forced),
        ..Default::default()
    })
    .unwrap();
    let gate_of = gate(
        &policy,
        UpkeepProcedure::Compact,
        by(UpkeepProcedure::Compact),
    );
    assert_eq!(gate_of, Gate::Plan);
}

//! The effective table retention policy expiry applies (policy mode, without `snapshot_ids`).
//!
//! Precedence, lowest to highest:
//! 1. session settings `iceberg_expire_default_min_snapshots_to_keep` (1),
//!    `iceberg_expire_default_max_snapshot_age_ms` (432000000 = 5 days),
//!    `iceberg_expire_default_max_ref_age_ms` (forever = `i64::MAX`) — [`TablePolicy::default`];
//! 2. table properties `history.expire.min-snapshots-to-keep`, `history.expire.max-snapshot-age-ms`,
//!    `history.expire.max-ref-age-ms` (Iceberg spec, "Snapshot Retention Policy");
//! 3. the call's `retain_last` and `retention_period`.
//!
//! A ref's own `min-snapshots-to-keep`, `max-snapshot-age-ms`, `max-ref-age-ms` win for that ref;
//! that is applied by [`super::policy`], not here.
//!
//! Property values are strings holding a base-10 integer (as Java's `PropertyUtil` reads them). A
//! value that is not an integer, overflows, is negative, or (for the minimum count) is zero is a
//! `BAD_ARGUMENTS` naming the property and the value; so is an out-of-range setting or argument.
//! ClickHouse parses these with `std::stoi`/`std::stoll`, which accepts `"12abc"`; icetrim does not.

use crate::error::{Error, Result};
use crate::iceberg::spec::SnapshotRef;

/// Table property: minimum number of snapshots kept on each branch.
pub const PROP_MIN_SNAPSHOTS_TO_KEEP: &str = "history.expire.min-snapshots-to-keep";
/// Table property: maximum age (ms) of snapshots kept on each branch and of unreferenced snapshots.
pub const PROP_MAX_SNAPSHOT_AGE_MS: &str = "history.expire.max-snapshot-age-ms";
/// Table property: maximum age (ms) of a ref's head before the ref is removed (never `main`).
pub const PROP_MAX_REF_AGE_MS: &str = "history.expire.max-ref-age-ms";

/// Session setting names, for messages about invalid setting values.
pub const SETTING_MIN_SNAPSHOTS_TO_KEEP: &str = "iceberg_expire_default_min_snapshots_to_keep";
pub const SETTING_MAX_SNAPSHOT_AGE_MS: &str = "iceberg_expire_default_max_snapshot_age_ms";
pub const SETTING_MAX_REF_AGE_MS: &str = "iceberg_expire_default_max_ref_age_ms";

/// The table-level retention policy: what a ref without its own fields gets, and the age limit for
/// snapshots that no branch or tag reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TablePolicy {
    /// At least this many snapshots are kept on each branch (≥ 1).
    pub min_snapshots_to_keep: i32,
    /// Snapshots with `now - timestamp <= max_snapshot_age_ms` are kept (≥ 0).
    pub max_snapshot_age_ms: i64,
    /// A non-main ref whose head has `now - timestamp > max_ref_age_ms` is removed (≥ 0).
    pub max_ref_age_ms: i64,
}

impl Default for TablePolicy {
    /// The session settings' defaults: keep 1, 5 days, refs forever.
    fn default() -> Self {
        TablePolicy {
            min_snapshots_to_keep: 1,
            max_snapshot_age_ms: 432_000_000,
            max_ref_age_ms: i64::MAX,
        }
    }
}

/// The session settings as the lowest layer of the policy (`iceberg_expire_default_*`).
pub fn session_policy(settings: &crate::settings::Settings) -> Result<TablePolicy> {
    let min_keep = settings.expire_default_min_snapshots_to_keep();
    let min_snapshots_to_keep = i32::try_from(min_keep).map_err(|_| {
        Error::bad_arguments(format!(
            "{SETTING_MIN_SNAPSHOTS_TO_KEEP} must be in range [1, {}], got {min_keep}",
            i32::MAX
        ))
    })?;
    Ok(TablePolicy {
        min_snapshots_to_keep,
        max_snapshot_age_ms: settings.expire_default_max_snapshot_age_ms(),
        max_ref_age_ms: settings.expire_default_max_ref_age_ms(),
    })
}

/// The retention in force on a table without a call's arguments: the session settings under the
/// table's properties, with every ref's own fields (what `system.iceberg_retention` shows; an
/// expiry's EXPLAIN shows the same, with its arguments on top).
pub fn table_retention(
    settings: &crate::settings::Settings,
    properties: &std::collections::BTreeMap<String, String>,
    refs: &[SnapshotRef],
) -> Result<Retention> {
    let (policy, sources) =
        effective_policy_sourced(session_policy(settings)?, properties, None, None)?;
    Ok(Retention {
        policy,
        sources,
        refs: refs.to_vec(),
        now_ms: 0,
        retain_last_alone: None,
    })
}

/// Where an effective policy value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    /// The default of this session setting.
    Setting(&'static str),
    /// This table property.
    Property(&'static str),
    /// This argument of the call.
    Argument(&'static str),
    /// The ref's own field (the ref's name).
    Ref(String),
}

impl std::fmt::Display for PolicySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PolicySource::Setting(name) => write!(f, "default of setting {name}"),
            PolicySource::Property(name) => write!(f, "table property {name}"),
            PolicySource::Argument(name) => write!(f, "argument {name}"),
            PolicySource::Ref(name) => write!(f, "ref '{name}'"),
        }
    }
}

/// Where each value of a [`TablePolicy`] comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySources {
    pub min_snapshots_to_keep: PolicySource,
    pub max_snapshot_age_ms: PolicySource,
    pub max_ref_age_ms: PolicySource,
}

impl Default for PolicySources {
    /// Every value from its session setting.
    fn default() -> Self {
        PolicySources {
            min_snapshots_to_keep: PolicySource::Setting(SETTING_MIN_SNAPSHOTS_TO_KEEP),
            max_snapshot_age_ms: PolicySource::Setting(SETTING_MAX_SNAPSHOT_AGE_MS),
            max_ref_age_ms: PolicySource::Setting(SETTING_MAX_REF_AGE_MS),
        }
    }
}

/// The effective policy: `defaults` (the session settings) overridden by the table `properties`,
/// overridden by the call's `retain_last` and `retention_period_ms`.
///
/// `properties` is any map of table properties (`&BTreeMap<String, String>`, `&HashMap<..>`).
pub fn effective_policy<'a, P>(
    defaults: TablePolicy,
    properties: P,
    retain_last: Option<i32>,
    retention_period_ms: Option<i64>,
) -> Result<TablePolicy>
where
    P: IntoIterator<Item = (&'a String, &'a String)>,
{
    effective_policy_sourced(defaults, properties, retain_last, retention_period_ms)
        .map(|(policy, _)| policy)
}

/// [`effective_policy`], with where each value comes from (what EXPLAIN names).
pub fn effective_policy_sourced<'a, P>(
    defaults: TablePolicy,
    properties: P,
    retain_last: Option<i32>,
    retention_period_ms: Option<i64>,
) -> Result<(TablePolicy, PolicySources)>
where
    P: IntoIterator<Item = (&'a String, &'a String)>,
{
    validate_settings(&defaults)?;
    let mut policy = defaults;
    let mut sources = PolicySources::default();
    for (key, value) in properties {
        match key.as_str() {
            PROP_MIN_SNAPSHOTS_TO_KEEP => {
                policy.min_snapshots_to_keep = parse_min_keep(value)?;
                sources.min_snapshots_to_keep = PolicySource::Property(PROP_MIN_SNAPSHOTS_TO_KEEP);
            }
            PROP_MAX_SNAPSHOT_AGE_MS => {
                policy.max_snapshot_age_ms = parse_age(key, value)?;
                sources.max_snapshot_age_ms = PolicySource::Property(PROP_MAX_SNAPSHOT_AGE_MS);
            }
            PROP_MAX_REF_AGE_MS => {
                policy.max_ref_age_ms = parse_age(key, value)?;
                sources.max_ref_age_ms = PolicySource::Property(PROP_MAX_REF_AGE_MS);
            }
            _ => {}
        }
    }
    if let Some(n) = retain_last {
        if n < 1 {
            return Err(Error::bad_arguments(
                "expire_snapshots expects 'retain_last' to be positive",
            ));
        }
        policy.min_snapshots_to_keep = n;
        sources.min_snapshots_to_keep = PolicySource::Argument("retain_last");
    }
    if let Some(ms) = retention_period_ms {
        if ms < 0 {
            return Err(Error::bad_arguments(
                "expire_snapshots expects 'retention_period' to be non-negative",
            ));
        }
        policy.max_snapshot_age_ms = ms;
        sources.max_snapshot_age_ms = PolicySource::Argument("retention_period");
    }
    Ok((policy, sources))
}

/// The retention a policy-mode expiry applied: the table policy with its sources and the refs'
/// own fields, so that every verdict can name the number that decided it (EXPLAIN) and a call
/// that protected less than it meant can be told so (the warnings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    pub policy: TablePolicy,
    pub sources: PolicySources,
    /// Every ref, with its own fields.
    pub refs: Vec<SnapshotRef>,
    pub now_ms: i64,
    /// The call's `retain_last`, when given without `retention_period`.
    pub retain_last_alone: Option<i32>,
}

impl Retention {
    fn own(&self, name: &str) -> Option<&SnapshotRef> {
        self.refs.iter().find(|r| r.name == name)
    }

    /// Branch `name`'s min-snapshots-to-keep and where it comes from.
    pub fn min_snapshots_to_keep(&self, name: &str) -> (i32, PolicySource) {
        match self.own(name).and_then(|r| r.min_snapshots_to_keep) {
            Some(n) => (n, PolicySource::Ref(name.to_string())),
            None => (
                self.policy.min_snapshots_to_keep,
                self.sources.min_snapshots_to_keep.clone(),
            ),
        }
    }

    /// Branch `name`'s max-snapshot-age-ms and where it comes from.
    pub fn max_snapshot_age_ms(&self, name: &str) -> (i64, PolicySource) {
        match self.own(name).and_then(|r| r.max_snapshot_age_ms) {
            Some(ms) => (ms, PolicySource::Ref(name.to_string())),
            None => (
                self.policy.max_snapshot_age_ms,
                self.sources.max_snapshot_age_ms.clone(),
            ),
        }
    }

    /// Ref `name`'s max-ref-age-ms and where it comes from.
    pub fn max_ref_age_ms(&self, name: &str) -> (i64, PolicySource) {
        match self.own(name).and_then(|r| r.max_ref_age_ms) {
            Some(ms) => (ms, PolicySource::Ref(name.to_string())),
            None => (
                self.policy.max_ref_age_ms,
                self.sources.max_ref_age_ms.clone(),
            ),
        }
    }
}

/// `ms` as people read an age limit: `432000000 ms (5days)`, or `forever` for the largest value
/// (no limit).
pub fn age_limit_text(ms: i64) -> String {
    if ms == i64::MAX {
        return "forever".to_string();
    }
    let human = humantime::format_duration(std::time::Duration::from_millis(
        u64::try_from(ms).unwrap_or(0),
    ));
    format!("{ms} ms ({human})")
}

fn validate_settings(defaults: &TablePolicy) -> Result<()> {
    if defaults.min_snapshots_to_keep < 1 {
        return Err(Error::bad_arguments(format!(
            "{SETTING_MIN_SNAPSHOTS_TO_KEEP} must be in range [1, {}], got {}",
            i32::MAX,
            defaults.min_snapshots_to_keep
        )));
    }
    for (name, value) in [
        (SETTING_MAX_SNAPSHOT_AGE_MS, defaults.max_snapshot_age_ms),
        (SETTING_MAX_REF_AGE_MS, defaults.max_ref_age_ms),
    ] {
        if value < 0 {
            return Err(Error::bad_arguments(format!(
                "{name} must be non-negative, got {value}"
            )));
        }
    }
    Ok(())
}

fn invalid_property(key: &str, value: &str, expected: &str) -> Error {
    Error::bad_arguments(format!(
        "Invalid value '{value}' of table property '{key}': expected {expected}"
    ))
}

fn parse_min_keep(value: &str) -> Result<i32> {
    let expected = format!("an integer in range [1, {}]", i32::MAX);
    let n = parse_integer(value)
        .ok_or_else(|| invalid_property(PROP_MIN_SNAPSHOTS_TO_KEEP, value, &expected))?;
    i32::try_from(n)
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| invalid_property(PROP_MIN_SNAPSHOTS_TO_KEEP, value, &expected))
}

fn parse_age(key: &str, value: &str) -> Result<i64> {
    let expected = format!(
        "an integer number of milliseconds in range [0, {}]",
        i64::MAX
    );
    parse_integer(value)
        .and_then(|n| i64::try_from(n).ok())
        .filter(|n| *n >= 0)
        .ok_or_else(|| invalid_property(key, value, &expected))
}

/// A base-10 integer with an optional sign, no spaces; wide enough to tell overflow from garbage.
fn parse_integer(value: &str) -> Option<i128> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Only a digit string too long for i128 fails here, and it is out of every range we accept.
    Some(value.parse::<i128>().unwrap_or(i128::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::collections::{BTreeMap, HashMap};

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn policy(pairs: &[(&str, &str)]) -> Result<TablePolicy> {
        effective_policy(TablePolicy::default(), &props(pairs), None, None)
    }

    #[test]
    fn settings_defaults_apply_without_properties_or_arguments() {
        assert_eq!(policy(&[]).unwrap(), TablePolicy::default());
        assert_eq!(
            TablePolicy::default(),
            TablePolicy {
                min_snapshots_to_keep: 1,
                max_snapshot_age_ms: 432_000_000,
                max_ref_age_ms: i64::MAX
            }
        );
    }

    #[test]
    fn properties_override_settings() {
        let p = policy(&[
            (PROP_MIN_SNAPSHOTS_TO_KEEP, "7"),
            (PROP_MAX_SNAPSHOT_AGE_MS, "1000"),
            (PROP_MAX_REF_AGE_MS, "0"),
            ("write.format.default", "parquet"),
        ])
        .unwrap();
        assert_eq!(
            p,
            TablePolicy {
                min_snapshots_to_keep: 7,
                max_snapshot_age_ms: 1000,
                max_ref_age_ms: 0
            }
        );
    }

    #[test]
    fn arguments_override_properties() {
        let pr = props(&[
            (PROP_MIN_SNAPSHOTS_TO_KEEP, "7"),
            (PROP_MAX_SNAPSHOT_AGE_MS, "1000"),
        ]);
        let p = effective_policy(TablePolicy::default(), &pr, Some(3), Some(5)).unwrap();
        assert_eq!(p.min_snapshots_to_keep, 3);
        assert_eq!(p.max_snapshot_age_ms, 5);
        assert_eq!(p.max_ref_age_ms, i64::MAX);
    }

    #[test]
    fn arguments_override_settings_and_hash_maps_work() {
        let pr: HashMap<String, String> = HashMap::new();
        let p = effective_policy(TablePolicy::default(), &pr, Some(10), Some(0)).unwrap();
        assert_eq!(p.min_snapshots_to_keep, 10);
        assert_eq!(p.max_snapshot_age_ms, 0);
    }

    #[test]
    fn custom_settings_are_the_base() {
        let base = TablePolicy {
            min_snapshots_to_keep: 4,
            max_snapshot_age_ms: 9,
            max_ref_age_ms: 99,
        };
        assert_eq!(
            effective_policy(base, &props(&[]), None, None).unwrap(),
            base
        );
        let p = effective_policy(base, &props(&[(PROP_MAX_REF_AGE_MS, "5")]), None, None).unwrap();
        assert_eq!(p.max_ref_age_ms, 5);
        assert_eq!(p.min_snapshots_to_keep, 4);
    }

    fn assert_bad_property(key: &str, value: &str) {
        let err = policy(&[(key, value)]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadArguments, "{key}={value}");
        assert!(err.message().contains(key), "{}", err.message());
        assert!(
            err.message().contains(&format!("'{value}'")),
            "{}",
            err.message()
        );
    }

    #[test]
    fn invalid_property_values_are_bad_arguments_naming_property_and_value() {
        for value in [
            "", "abc", "12abc", " 5", "5 ", "1.5", "1e3", "-", "+", "0x10",
        ] {
            assert_bad_property(PROP_MIN_SNAPSHOTS_TO_KEEP, value);
            assert_bad_property(PROP_MAX_SNAPSHOT_AGE_MS, value);
            assert_bad_property(PROP_MAX_REF_AGE_MS, value);
        }
        // Zero or negative minimum; negative ages.
        assert_bad_property(PROP_MIN_SNAPSHOTS_TO_KEEP, "0");
        assert_bad_property(PROP_MIN_SNAPSHOTS_TO_KEEP, "-1");
        assert_bad_property(PROP_MAX_SNAPSHOT_AGE_MS, "-1");
        assert_bad_property(PROP_MAX_REF_AGE_MS, "-5");
        // Overflow.
        assert_bad_property(PROP_MIN_SNAPSHOTS_TO_KEEP, "2147483648");
        assert_bad_property(PROP_MAX_SNAPSHOT_AGE_MS, "9223372036854775808");
        assert_bad_property(
            PROP_MAX_REF_AGE_MS,
            "99999999999999999999999999999999999999999",
        );
    }

    #[test]
    fn boundary_property_values_are_accepted() {
        let p = policy(&[
            (PROP_MIN_SNAPSHOTS_TO_KEEP, "2147483647"),
            (PROP_MAX_SNAPSHOT_AGE_MS, "9223372036854775807"),
            (PROP_MAX_REF_AGE_MS, "+0"),
        ])
        .unwrap();
        assert_eq!(p.min_snapshots_to_keep, i32::MAX);
        assert_eq!(p.max_snapshot_age_ms, i64::MAX);
        assert_eq!(p.max_ref_age_ms, 0);
        assert_eq!(
            policy(&[(PROP_MIN_SNAPSHOTS_TO_KEEP, "001")])
                .unwrap()
                .min_snapshots_to_keep,
            1
        );
    }

    #[test]
    fn invalid_arguments_and_settings_are_rejected() {
        let none = props(&[]);
        for (retain, period) in [(Some(0), None), (Some(-1), None), (None, Some(-1))] {
            let err = effective_policy(TablePolicy::default(), &none, retain, period).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BadArguments);
        }
        let bad = [
            (
                TablePolicy {
                    min_snapshots_to_keep: 0,
                    ..TablePolicy::default()
                },
                SETTING_MIN_SNAPSHOTS_TO_KEEP,
            ),
            (
                TablePolicy {
                    max_snapshot_age_ms: -1,
                    ..TablePolicy::default()
                },
                SETTING_MAX_SNAPSHOT_AGE_MS,
            ),
            (
                TablePolicy {
                    max_ref_age_ms: -1,
                    ..TablePolicy::default()
                },
                SETTING_MAX_REF_AGE_MS,
            ),
        ];
        for (settings, name) in bad {
            let err = effective_policy(settings, &none, None, None).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BadArguments);
            assert!(err.message().contains(name), "{}", err.message());
        }
    }

    proptest::proptest! {
        #[test]
        fn arguments_win_and_valid_values_round_trip(
            keep in 1i32..=i32::MAX,
            age in 0i64..=i64::MAX,
            ref_age in 0i64..=i64::MAX,
            retain in proptest::option::of(1i32..=i32::MAX),
            period in proptest::option::of(0i64..=i64::MAX),
        ) {
            let pr = props(&[
                (PROP_MIN_SNAPSHOTS_TO_KEEP, &keep.to_string()),
                (PROP_MAX_SNAPSHOT_AGE_MS, &age.to_string()),
                (PROP_MAX_REF_AGE_MS, &ref_age.to_string()),
            ]);
            let p = effective_policy(TablePolicy::default(), &pr, retain, period).unwrap();
            proptest::prop_assert_eq!(p.min_snapshots_to_keep, retain.unwrap_or(keep));
            proptest::prop_assert_eq!(p.max_snapshot_age_ms, period.unwrap_or(age));
            proptest::prop_assert_eq!(p.max_ref_age_ms, ref_age);
        }

        #[test]
        fn any_other_text_is_rejected_not_misread(value in "\\PC{0,12}") {
            let valid = value.parse::<i64>().is_ok_and(|n| n >= 0);
            let result = policy(&[(PROP_MAX_SNAPSHOT_AGE_MS, value.as_str())]);
            proptest::prop_assert_eq!(result.is_ok(), valid, "{:?}", value);
        }
    }

    #[test]
    fn every_value_names_where_it_comes_from() {
        let props = props(&[(PROP_MAX_REF_AGE_MS, "1000")]);
        let (policy, sources) =
            effective_policy_sourced(TablePolicy::default(), &props, Some(3), None).unwrap();
        assert_eq!(policy.min_snapshots_to_keep, 3);
        assert_eq!(
            sources.min_snapshots_to_keep.to_string(),
            "argument retain_last"
        );
        assert_eq!(
            sources.max_snapshot_age_ms.to_string(),
            "default of setting iceberg_expire_default_max_snapshot_age_ms"
        );
        assert_eq!(
            sources.max_ref_age_ms.to_string(),
            "table property history.expire.max-ref-age-ms"
        );
        let (_, sources) =
            effective_policy_sourced(TablePolicy::default(), &props, None, Some(0)).unwrap();
        assert_eq!(
            sources.max_snapshot_age_ms,
            PolicySource::Argument("retention_period")
        );
        assert_eq!(
            sources.min_snapshots_to_keep,
            PolicySources::default().min_snapshots_to_keep
        );
    }

    fn branch(name: &str, min_keep: Option<i32>, max_ref_age_ms: Option<i64>) -> SnapshotRef {
        SnapshotRef {
            name: name.to_string(),
            kind: crate::iceberg::spec::RefKind::Branch,
            snapshot_id: 1,
            min_snapshots_to_keep: min_keep,
            max_snapshot_age_ms: None,
            max_ref_age_ms,
        }
    }

    #[test]
    fn a_refs_own_field_wins_and_is_named() {
        let retention = Retention {
            policy: TablePolicy::default(),
            sources: PolicySources::default(),
            refs: vec![
                branch("main", None, None),
                branch("audit", Some(3), Some(60_000)),
            ],
            now_ms: 0,
            retain_last_alone: None,
        };
        assert_eq!(
            retention.min_snapshots_to_keep("audit"),
            (3, PolicySource::Ref("audit".into()))
        );
        let (n, from) = retention.min_snapshots_to_keep("main");
        assert_eq!(
            (n, from.to_string().as_str()),
            (
                1,
                "default of setting iceberg_expire_default_min_snapshots_to_keep"
            )
        );
        assert_eq!(retention.max_ref_age_ms("audit").0, 60_000);
        assert_eq!(retention.max_ref_age_ms("nobody").0, i64::MAX);
        assert_eq!(retention.max_snapshot_age_ms("audit").0, 432_000_000);
        assert_eq!(age_limit_text(i64::MAX), "forever");
        assert_eq!(age_limit_text(432_000_000), "432000000 ms (5days)");
    }
}

//! The maintenance policy of one table (`SYSTEM MAINTAIN`): each knob's effective value and where
//! it comes from, and the pure per-procedure decisions (enabled, skipped, disabled) taken before
//! any procedure plans. Data in, data out: no I/O.
//!
//! Precedence, highest first (one function, [`effective_upkeep`], computes it; EXPLAIN shows the
//! source of every value):
//! 1. the statement's `SETTINGS iceberg_maintain_* = …`;
//! 2. the table property `icetrim.maintain.*`;
//! 3. the catalog database's `SETTINGS iceberg_maintain_* = …` (a `DataLakeCatalog` database);
//! 4. the session setting `iceberg_maintain_*` (when set in the session);
//! 5. the built-in default.
//!
//! Floors: orphan removal's `older-than` is never under 24 hours (`BAD_ARGUMENTS`, as Spark
//! refuses shorter); a table with `gc.enabled = false` gets no procedure that deletes files.
//! Expiry retention is not a knob here: it is the table's own retention
//! ([`super::expire::retention`]: `history.expire.*` over `iceberg_expire_default_*`).

use std::collections::BTreeMap;

use crate::catalog::{OwnMaintenance, OwnMaintenanceKind};
use crate::error::{Error, Result};

/// The shortest `older-than` orphan removal accepts: 24 hours, in ms.
pub const ORPHANS_MIN_OLDER_THAN_MS: i64 = 86_400_000;

/// The table property that turns off every delete of table files (Iceberg's `gc.enabled`).
pub const PROP_GC_ENABLED: &str = "gc.enabled";

/// A knob's value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnobKind {
    Bool,
    UInt,
}

/// One knob of the policy: its table property, its setting, its built-in default and where that
/// default comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnobDef {
    pub property: &'static str,
    pub setting: &'static str,
    pub kind: KnobKind,
    pub default: u64,
    pub doc: &'static str,
}

/// Maintenance of the table at all.
pub const ENABLED: KnobDef = KnobDef {
    property: "icetrim.maintain.enabled",
    setting: "iceberg_maintain_enabled",
    kind: KnobKind::Bool,
    default: 1,
    doc: "maintain this table at all",
};
/// Compaction is due when a file group of at least this many small files exists.
pub const COMPACT_MIN_INPUT_FILES: KnobDef = KnobDef {
    property: "icetrim.maintain.compact.min-input-files",
    setting: "iceberg_maintain_compact_min_input_files",
    kind: KnobKind::UInt,
    default: 5,
    doc: "compaction is due when a group has at least this many files (Java's min-input-files)",
};
/// Manifest rewrite is due past this many manifests in the current snapshot.
pub const MANIFESTS_MIN_COUNT: KnobDef = KnobDef {
    property: "icetrim.maintain.manifests.min-count",
    setting: "iceberg_maintain_manifests_min_count",
    kind: KnobKind::UInt,
    default: 100,
    doc: "manifest rewrite is due above this many manifests (ClickHouse's OPTIMIZE ... MANIFEST)",
};
/// Expiry also removes the partition specs and schemas no retained snapshot uses (Apache Iceberg
/// 1.10's `cleanExpiredMetadata`, off by default there too).
pub const EXPIRE_CLEAN_METADATA: KnobDef = KnobDef {
    property: "icetrim.maintain.expire.clean-expired-metadata",
    setting: "iceberg_maintain_expire_clean_expired_metadata",
    kind: KnobKind::Bool,
    default: 0,
    doc: "expiry also removes partition specs and schemas no retained snapshot uses (Java's clean_expired_metadata)",
};
/// Orphan removal (off by default, as in Amoro).
pub const ORPHANS_ENABLED: KnobDef = KnobDef {
    property: "icetrim.maintain.orphans.enabled",
    setting: "iceberg_maintain_orphans_enabled",
    kind: KnobKind::Bool,
    default: 0,
    doc: "remove orphan files (off by default)",
};
/// Orphan removal's age threshold, ms (Java's default: 3 days; floor 24 hours).
pub const ORPHANS_OLDER_THAN_MS: KnobDef = KnobDef {
    property: "icetrim.maintain.orphans.older-than-ms",
    setting: "iceberg_maintain_orphans_older_than_ms",
    kind: KnobKind::UInt,
    default: 259_200_000,
    doc: "orphan files younger than this many ms are kept (at least 86400000)",
};
/// Maintain tables a catalog maintains itself.
pub const FORCE: KnobDef = KnobDef {
    property: "icetrim.maintain.force",
    setting: "iceberg_maintain_force",
    kind: KnobKind::Bool,
    default: 0,
    doc: "maintain tables a catalog maintains itself (S3 Tables, Glue optimizers)",
};

/// How long a maintainer's lease on a table lasts, seconds (renewed every third of it while the
/// table's procedures run; see [`super::lease`]).
pub const LEASE_SECONDS: KnobDef = KnobDef {
    property: "icetrim.maintain.lease-seconds",
    setting: "iceberg_maintain_lease_seconds",
    kind: KnobKind::UInt,
    default: 600,
    doc: "a run holds the table's maintenance lease this many seconds, renewed every third (at least 1)",
};

/// Every knob, in EXPLAIN's order.
pub const KNOBS: &[KnobDef] = &[
    ENABLED,
    COMPACT_MIN_INPUT_FILES,
    MANIFESTS_MIN_COUNT,
    EXPIRE_CLEAN_METADATA,
    ORPHANS_ENABLED,
    ORPHANS_OLDER_THAN_MS,
    FORCE,
    LEASE_SECONDS,
];

/// The knob whose setting is `name`.
pub fn knob_of_setting(name: &str) -> Option<&'static KnobDef> {
    KNOBS.iter().find(|k| k.setting == name)
}

/// Where a knob's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnobSource {
    Statement,
    Property,
    Database(String),
    Session,
    Default,
}

/// A knob's effective value and source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knob {
    pub def: KnobDef,
    pub value: u64,
    pub source: KnobSource,
}

impl Knob {
    /// `name=value (source)`, as EXPLAIN shows it.
    pub fn describe(&self) -> String {
        let source = match &self.source {
            KnobSource::Statement => format!("statement setting {}", self.def.setting),
            KnobSource::Property => format!("table property {}", self.def.property),
            KnobSource::Database(db) => format!("database {db} setting {}", self.def.setting),
            KnobSource::Session => format!("session setting {}", self.def.setting),
            KnobSource::Default => "default".to_string(),
        };
        format!("{}={} ({source})", self.def.setting, self.value)
    }
}

/// The layers a policy is computed from, every map keyed by setting or property name with the
/// value as text. `session` holds only the settings the session changed.
#[derive(Debug, Clone, Default)]
pub struct PolicyLayers<'a> {
    pub statement: Option<&'a BTreeMap<String, String>>,
    pub properties: Option<&'a BTreeMap<String, String>>,
    /// The catalog database's name and its settings.
    pub database: Option<(&'a str, &'a BTreeMap<String, String>)>,
    pub session: Option<&'a BTreeMap<String, String>>,
}

/// The effective policy of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpkeepPolicy {
    pub knobs: Vec<Knob>,
    /// `gc.enabled` is false: nothing may be deleted.
    pub gc_disabled: bool,
}

impl UpkeepPolicy {
    fn knob(&self, def: &KnobDef) -> &Knob {
        // Every policy holds every knob (built from KNOBS).
        self.knobs
            .iter()
            .find(|k| k.def.setting == def.setting)
            .unwrap_or(&self.knobs[0])
    }
    fn flag(&self, def: &KnobDef) -> bool {
        self.knob(def).value != 0
    }
    pub fn enabled(&self) -> bool {
        self.flag(&ENABLED)
    }
    pub fn force(&self) -> bool {
        self.flag(&FORCE)
    }
    pub fn orphans_enabled(&self) -> bool {
        self.flag(&ORPHANS_ENABLED)
    }
    pub fn compact_min_input_files(&self) -> u64 {
        self.knob(&COMPACT_MIN_INPUT_FILES).value
    }
    pub fn manifests_min_count(&self) -> u64 {
        self.knob(&MANIFESTS_MIN_COUNT).value
    }
    pub fn expire_clean_metadata(&self) -> bool {
        self.flag(&EXPIRE_CLEAN_METADATA)
    }
    /// The maintenance lease time, ms.
    pub fn lease_ms(&self) -> i64 {
        i64::try_from(self.knob(&LEASE_SECONDS).value)
            .unwrap_or(i64::MAX / 1000)
            .saturating_mul(1000)
    }
    pub fn orphans_older_than_ms(&self) -> i64 {
        i64::try_from(self.knob(&ORPHANS_OLDER_THAN_MS).value).unwrap_or(i64::MAX)
    }
    /// The knobs that decide `procedure`, as `name=value (source)`, joined by `, `.
    pub fn describe_for(&self, procedure: UpkeepProcedure) -> String {
        let parts: Vec<String> = procedure
            .knobs()
            .iter()
            .map(|def| self.knob(def).describe())
            .collect();
        parts.join(", ")
    }
}

/// The effective policy from its layers (see the module comment for the precedence). A value
/// that does not parse, or an orphan `older-than` under 24 hours while orphan removal is on, is a
/// `BAD_ARGUMENTS` naming where it was written.
pub fn effective_upkeep(layers: &PolicyLayers) -> Result<UpkeepPolicy> {
    let mut knobs = Vec::with_capacity(KNOBS.len());
    for def in KNOBS {
        knobs.push(effective_knob(def, layers)?);
    }
    let gc_disabled = layers
        .properties
        .and_then(|p| p.get(PROP_GC_ENABLED))
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"));
    let policy = UpkeepPolicy { knobs, gc_disabled };
    if policy.orphans_enabled() && policy.orphans_older_than_ms() < ORPHANS_MIN_OLDER_THAN_MS {
        let knob = policy.knob(&ORPHANS_OLDER_THAN_MS);
        return Err(Error::bad_arguments(format!(
            "Orphan removal's older-than must be at least 24 hours ({ORPHANS_MIN_OLDER_THAN_MS} \
             ms): {} is {} ms; a shorter threshold can delete files of a commit still in flight",
            knob.describe(),
            knob.value
        )));
    }
    if policy.knob(&LEASE_SECONDS).value == 0 {
        return Err(Error::bad_arguments(format!(
            "The maintenance lease must last at least 1 second: {}",
            policy.knob(&LEASE_SECONDS).describe()
        )));
    }
    Ok(policy)
}

fn effective_knob(def: &KnobDef, layers: &PolicyLayers) -> Result<Knob> {
    let candidates = [
        (
            found(layers.statement, def.setting),
            KnobSource::Statement,
            def.setting,
        ),
        (
            found(layers.properties, def.property),
            KnobSource::Property,
            def.property,
        ),
        (
            layers
                .database
                .and_then(|(_, m)| m.get(def.setting).map(String::as_str)),
            KnobSource::Database(layers.database.map(|(n, _)| n).unwrap_or("").to_string()),
            def.setting,
        ),
        (
            found(layers.session, def.setting),
            KnobSource::Session,
            def.setting,
        ),
    ];
    for (text, source, name) in candidates {
        if let Some(text) = text {
            let value = parse_value(def.kind, name, text)?;
            return Ok(Knob {
                def: *def,
                value,
                source,
            });
        }
    }
    Ok(Knob {
        def: *def,
        value: def.default,
        source: KnobSource::Default,
    })
}

fn found<'a>(map: Option<&'a BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    map.and_then(|m| m.get(key)).map(String::as_str)
}

/// A knob's text value: booleans `1`/`0`/`true`/`false`, integers base 10 without sign.
pub fn parse_value(kind: KnobKind, name: &str, text: &str) -> Result<u64> {
    let trimmed = text.trim();
    let parsed = match kind {
        KnobKind::Bool => match trimmed.to_ascii_lowercase().as_str() {
            "1" | "true" => Some(1),
            "0" | "false" => Some(0),
            _ => None,
        },
        KnobKind::UInt => trimmed
            .parse::<u64>()
            .ok()
            .filter(|_| trimmed.bytes().all(|b| b.is_ascii_digit())),
    };
    parsed.ok_or_else(|| {
        let expected = match kind {
            KnobKind::Bool => "a boolean (1, 0, true, false)",
            KnobKind::UInt => "a non-negative integer",
        };
        Error::bad_arguments(format!("{name} must be {expected}, got '{text}'"))
    })
}

/// The maintenance procedures, in the order a run applies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpkeepProcedure {
    Compact,
    RewriteManifests,
    Expire,
    Orphans,
}

impl UpkeepProcedure {
    /// Compaction first (its replaced files become expirable), then manifests, expiry (which
    /// deletes what compaction replaced once old enough), orphans last.
    pub const ORDER: [UpkeepProcedure; 4] = [
        UpkeepProcedure::Compact,
        UpkeepProcedure::RewriteManifests,
        UpkeepProcedure::Expire,
        UpkeepProcedure::Orphans,
    ];

    /// The procedure's SQL name.
    pub fn name(self) -> &'static str {
        match self {
            UpkeepProcedure::Compact => "rewrite_data_files",
            UpkeepProcedure::RewriteManifests => "rewrite_manifests",
            UpkeepProcedure::Expire => "expire_snapshots",
            UpkeepProcedure::Orphans => "remove_orphan_files",
        }
    }

    /// The knobs that decide the procedure (expiry's retention is the table's own, not a knob).
    pub fn knobs(self) -> &'static [KnobDef] {
        match self {
            UpkeepProcedure::Compact => &[COMPACT_MIN_INPUT_FILES],
            UpkeepProcedure::RewriteManifests => &[MANIFESTS_MIN_COUNT],
            UpkeepProcedure::Expire => &[EXPIRE_CLEAN_METADATA],
            UpkeepProcedure::Orphans => &[ORPHANS_ENABLED, ORPHANS_OLDER_THAN_MS],
        }
    }

    /// Whether the procedure deletes table files.
    pub fn deletes(self) -> bool {
        matches!(self, UpkeepProcedure::Expire | UpkeepProcedure::Orphans)
    }
}

/// The service that maintains a catalog's tables itself, from the catalog database's arguments
/// (its URL first) and `warehouse` setting: Amazon S3 Tables (its Iceberg REST endpoint
/// `s3tables.<region>.amazonaws.com`, or a table bucket ARN `arn:aws:s3tables:…` as warehouse).
pub fn catalog_maintainer(args: &[String], warehouse: Option<&String>) -> Option<&'static str> {
    let url_says = args
        .first()
        .is_some_and(|url| url.to_ascii_lowercase().contains("s3tables."));
    let warehouse_says = warehouse.is_some_and(|w| w.starts_with("arn:aws:s3tables:"));
    (url_says || warehouse_says).then_some("S3 Tables")
}

/// Who maintains `procedure` of a table instead of icetrim: a catalog that maintains the whole
/// table (`whole_table`, e.g. S3 Tables), else the catalog's own maintenance of that kind (an
/// AWS Glue table optimizer; none rewrites manifests). `None`: icetrim does.
pub fn maintainer_of(
    procedure: UpkeepProcedure,
    whole_table: Option<&'static str>,
    own: &[OwnMaintenance],
) -> Option<&'static str> {
    if whole_table.is_some() {
        return whole_table;
    }
    let kind = match procedure {
        UpkeepProcedure::Compact => OwnMaintenanceKind::Compaction,
        UpkeepProcedure::Expire => OwnMaintenanceKind::SnapshotRetention,
        UpkeepProcedure::Orphans => OwnMaintenanceKind::OrphanFiles,
        UpkeepProcedure::RewriteManifests => return None,
    };
    own.iter().find(|o| o.kind == kind).map(|o| o.by)
}

/// What the policy says of a procedure before it plans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Plan it: it is due when its plan has work.
    Plan,
    /// Turned off by the policy (reason).
    Disabled(String),
    /// Not run for a reason of the table (reason).
    Skipped(String),
}

/// The gate of `procedure` under `policy`, for a table `maintained_by` a catalog that maintains
/// it itself (that catalog's name), if any.
pub fn gate(
    policy: &UpkeepPolicy,
    procedure: UpkeepProcedure,
    maintained_by: Option<&str>,
) -> Gate {
    if !policy.enabled() {
        return Gate::Disabled(policy.knob(&ENABLED).describe());
    }
    if let Some(by) = maintained_by
        && !policy.force()
    {
        return Gate::Skipped(format!(
            "maintained by {by} (set {} = 1 to maintain it anyway)",
            FORCE.setting
        ));
    }
    if procedure.deletes() && policy.gc_disabled {
        return Gate::Skipped("gc.enabled = false: no files may be deleted".to_string());
    }
    if procedure == UpkeepProcedure::Orphans && !policy.orphans_enabled() {
        return Gate::Disabled(policy.knob(&ORPHANS_ENABLED).describe());
    }
    Gate::Plan
}

#[cfg(test)]
#[path = "upkeep_tests.rs"]
mod tests;

//! Session settings (`SET name = value`) and table settings (`CREATE TABLE … SETTINGS`): the
//! registry of known names with their type, default, validation and a doc line, and typed getters.
//!
//! Conversions follow ClickHouse 26.9 (observed through chdb): a Bool takes `0`/`1`, `true`/`false`
//! and the strings `'true'`/`'false'`/`'1'`/`'0'` ("Field value 2 is out of range of bool type",
//! "Cannot parse bool from string 'abc'"); a UInt takes a non-negative integer, a float (truncated),
//! a Bool, or a string of digits ("Field value -1 is out of range of unsigned long type"); a String
//! takes only a string ("Bad get: has UInt64, requested String"). icetrim reports all of these as
//! `BAD_ARGUMENTS` (ClickHouse uses several codes). The three ClickHouse gates default to 1 in
//! icetrim (ClickHouse: 0). Concurrency settings, `iceberg_commit_max_attempts` and
//! `iceberg_expire_default_min_snapshots_to_keep` refuse 0 ("Setting <name> must be at least 1,
//! got 0"): every path that sets a value (`SET`, the engine's defaults) goes through [`Settings::set`].

use std::collections::BTreeMap;

use crate::error::{Error, ErrorKind, Result};
use crate::literal::Literal;
use crate::time_zone::SessionTimeZone;

mod definitions;

use definitions::AT_LEAST_ONE;

/// How many tables `SYSTEM MAINTAIN` maintains at once (a session setting, and a statement
/// setting of `SYSTEM MAINTAIN` itself).
pub const MAINTAIN_MAX_PARALLEL_TABLES: &str = "iceberg_maintain_max_parallel_tables";
pub use definitions::{
    MAX_PARSER_DEPTH_CEILING, SESSION_SETTINGS, SettingDef, SettingType, SettingValue,
    TABLE_SETTINGS,
};

/// One setting's current value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Bool(bool),
    UInt(u64),
    String(String),
}

impl Value {
    fn default_of(def: &SettingDef) -> Value {
        match def.default {
            SettingValue::Bool(b) => Value::Bool(b),
            SettingValue::UInt(v) => Value::UInt(v),
            SettingValue::EmptyString => Value::String(String::new()),
        }
    }
}

/// A setting's default as `SHOW SETTINGS` prints values (`0`/`1` for Bool).
pub fn default_text(def: &SettingDef) -> String {
    match def.default {
        SettingValue::Bool(b) => u8::from(b).to_string(),
        SettingValue::UInt(v) => v.to_string(),
        SettingValue::EmptyString => String::new(),
    }
}

/// A setting type's ClickHouse name (`SHOW SETTINGS`' `type` column).
pub fn type_name(ty: SettingType) -> &'static str {
    match ty {
        SettingType::Bool => "Bool",
        SettingType::UInt => "UInt64",
        SettingType::String => "String",
    }
}

/// Values of a registry of settings (session or table), every known name present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    registry: &'static [SettingDef],
    values: BTreeMap<&'static str, Value>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::with_registry(SESSION_SETTINGS)
    }
}

impl Settings {
    /// Session settings at their defaults.
    pub fn new() -> Self {
        Settings::default()
    }

    /// Table settings at their defaults.
    pub fn table_defaults() -> Self {
        Settings::with_registry(TABLE_SETTINGS)
    }

    /// Table settings from `CREATE TABLE … SETTINGS` pairs.
    pub fn table_from_pairs(pairs: &[(String, Literal)]) -> Result<Self> {
        let mut settings = Settings::table_defaults();
        for (name, value) in pairs {
            settings.set(name, value)?;
        }
        Ok(settings)
    }

    fn with_registry(registry: &'static [SettingDef]) -> Self {
        let values = registry
            .iter()
            .map(|def| (def.name, Value::default_of(def)))
            .collect();
        Settings { registry, values }
    }

    /// The known settings of this registry.
    pub fn definitions(&self) -> &'static [SettingDef] {
        self.registry
    }

    /// Applies `SET a = 1, b = 2` all or nothing: every assignment is validated before any is kept.
    pub fn set_all(&mut self, assignments: &[(String, Literal)]) -> Result<()> {
        let mut updated = self.clone();
        for (name, value) in assignments {
            updated.set(name, value)?;
        }
        *self = updated;
        Ok(())
    }

    /// Sets `name` from a SQL literal, validating it.
    pub fn set(&mut self, name: &str, literal: &Literal) -> Result<()> {
        let Some(def) = self.registry.iter().find(|d| d.name == name) else {
            return Err(self.unknown(name));
        };
        let value = match def.ty {
            SettingType::Bool => Value::Bool(to_bool(literal)?),
            SettingType::UInt => Value::UInt(to_uint(literal)?),
            SettingType::String => Value::String(to_string(literal)?),
        };
        if def.name == "session_timezone"
            && let Value::String(zone) = &value
        {
            SessionTimeZone::from_setting(zone)?;
        }
        if AT_LEAST_ONE.contains(&def.name) && value == Value::UInt(0) {
            return Err(Error::bad_arguments(format!(
                "Setting {} must be at least 1, got 0",
                def.name
            )));
        }
        if def.name == "max_parser_depth"
            && !matches!(value, Value::UInt(1..=MAX_PARSER_DEPTH_CEILING))
        {
            return Err(Error::bad_arguments(format!(
                "Setting max_parser_depth must be between 1 and {MAX_PARSER_DEPTH_CEILING}, got \
                 {literal}: icetrim walks nested expressions one level at a time"
            )));
        }
        if def.name == "iceberg_format_version" && !matches!(value, Value::UInt(1..=3)) {
            return Err(Error::bad_arguments(format!(
                "iceberg_format_version must be 1, 2 or 3, got {literal}"
            )));
        }
        self.values.insert(def.name, value);
        Ok(())
    }

    fn unknown(&self, name: &str) -> Error {
        let is_table_setting = std::ptr::eq(self.registry, SESSION_SETTINGS)
            && TABLE_SETTINGS.iter().any(|d| d.name == name);
        let hint = if is_table_setting {
            ": it is a table setting, give it in CREATE TABLE ... SETTINGS".to_string()
        } else {
            let names = self.registry.iter().map(|d| d.name);
            crate::hints::maybe_you_meant(&crate::hints::closest(
                name,
                names,
                crate::hints::MAX_HINTS,
            ))
        };
        Error::new(
            ErrorKind::UnknownSetting,
            format!("Unknown setting '{name}'{hint}"),
        )
    }

    /// The value of `name` as SQL-ish text (`1`, `0`, `42`, `UTC`), for display.
    pub fn get_text(&self, name: &str) -> Option<String> {
        self.values.get(name).map(|value| match value {
            Value::Bool(b) => u8::from(*b).to_string(),
            Value::UInt(v) => v.to_string(),
            Value::String(s) => s.clone(),
        })
    }

    /// A Bool setting (false when unknown or of another type).
    pub fn get_bool(&self, name: &str) -> bool {
        matches!(self.values.get(name), Some(Value::Bool(true)))
    }

    /// A UInt setting (0 when unknown or of another type).
    pub fn get_uint(&self, name: &str) -> u64 {
        match self.values.get(name) {
            Some(Value::UInt(v)) => *v,
            _ => 0,
        }
    }

    /// A String setting (empty when unknown or of another type).
    pub fn get_string(&self, name: &str) -> &str {
        match self.values.get(name) {
            Some(Value::String(s)) => s,
            _ => "",
        }
    }

    /// A UInt setting as i64, saturating at `i64::MAX`.
    fn get_i64(&self, name: &str) -> i64 {
        i64::try_from(self.get_uint(name)).unwrap_or(i64::MAX)
    }

    /// The session time zone (`session_timezone`, else the process zone).
    pub fn session_time_zone(&self) -> SessionTimeZone {
        SessionTimeZone::from_setting(self.get_string("session_timezone"))
            .unwrap_or_else(|_| SessionTimeZone::process())
    }

    pub fn allow_insert_into_iceberg(&self) -> bool {
        self.get_bool("allow_insert_into_iceberg")
    }

    pub fn allow_experimental_expire_snapshots(&self) -> bool {
        self.get_bool("allow_experimental_expire_snapshots")
    }

    pub fn allow_iceberg_remove_orphan_files(&self) -> bool {
        self.get_bool("allow_iceberg_remove_orphan_files")
    }

    pub fn allow_experimental_iceberg_compaction(&self) -> bool {
        self.get_bool("allow_experimental_iceberg_compaction")
    }

    /// `OPTIMIZE TABLE t MANIFEST` acts only above this many manifests (ClickHouse's setting).
    pub fn manifest_min_count_to_compact(&self) -> u64 {
        self.get_uint("iceberg_manifest_min_count_to_compact")
    }

    pub fn allow_database_iceberg(&self) -> bool {
        self.get_bool("allow_database_iceberg")
    }

    pub fn warn_catalog_owned_tables(&self) -> bool {
        self.get_bool("iceberg_warn_catalog_owned_tables")
    }

    pub fn allow_database_glue_catalog(&self) -> bool {
        self.get_bool("allow_database_glue_catalog")
    }

    /// `max_query_size`: bytes of one statement's text (0: no limit).
    pub fn max_query_size(&self) -> u64 {
        self.get_uint("max_query_size")
    }

    /// `max_parser_depth`: nesting of brackets and `NOT` (1 to [`MAX_PARSER_DEPTH_CEILING`]).
    pub fn max_parser_depth(&self) -> u64 {
        self.get_uint("max_parser_depth")
    }

    /// `max_memory_usage` (0: unbounded).
    pub fn max_memory_usage(&self) -> u64 {
        self.get_uint("max_memory_usage")
    }

    /// `iceberg_metadata_tables_allow_full_scan`.
    pub fn metadata_tables_allow_full_scan(&self) -> bool {
        self.get_bool("iceberg_metadata_tables_allow_full_scan")
    }

    /// `iceberg_statement_cache_max_bytes` (0: no statement read cache).
    pub fn statement_cache_max_bytes(&self) -> u64 {
        self.get_uint("iceberg_statement_cache_max_bytes")
    }

    /// `iceberg_compaction_max_memory_bytes`.
    pub fn compaction_max_memory_bytes(&self) -> u64 {
        self.get_uint("iceberg_compaction_max_memory_bytes")
    }

    pub fn expire_default_min_snapshots_to_keep(&self) -> i64 {
        self.get_i64("iceberg_expire_default_min_snapshots_to_keep")
    }

    pub fn expire_default_max_snapshot_age_ms(&self) -> i64 {
        self.get_i64("iceberg_expire_default_max_snapshot_age_ms")
    }

    pub fn expire_default_max_ref_age_ms(&self) -> i64 {
        self.get_i64("iceberg_expire_default_max_ref_age_ms")
    }

    pub fn orphan_files_older_than_seconds(&self) -> i64 {
        self.get_i64("iceberg_orphan_files_older_than_seconds")
    }

    /// Whether expiry may take the incremental cleanup (`maintain::expire::incremental`).
    pub fn expire_incremental_cleanup(&self) -> bool {
        self.get_bool("iceberg_expire_incremental_cleanup")
    }

    /// At least 1 (0 is refused when set).
    pub fn metadata_read_concurrency(&self) -> usize {
        usize::try_from(self.get_uint("iceberg_metadata_read_concurrency").max(1)).unwrap_or(1)
    }

    /// At least 1 (0 is refused when set).
    pub fn maintain_max_parallel_tables(&self) -> u64 {
        self.get_uint(MAINTAIN_MAX_PARALLEL_TABLES).max(1)
    }

    /// At least 1.
    pub fn delete_concurrency(&self) -> usize {
        usize::try_from(self.get_uint("iceberg_delete_concurrency").max(1)).unwrap_or(1)
    }

    /// At least 1.
    pub fn commit_max_attempts(&self) -> u32 {
        u32::try_from(self.get_uint("iceberg_commit_max_attempts").max(1)).unwrap_or(u32::MAX)
    }
}

fn to_bool(literal: &Literal) -> Result<bool> {
    match literal {
        Literal::Bool(b) => Ok(*b),
        Literal::String(text) => match text.to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(Error::bad_arguments(format!(
                "Cannot parse bool from string '{text}'"
            ))),
        },
        other => match other.as_integer() {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            Some(v) => Err(Error::bad_arguments(format!(
                "Field value {v} is out of range of bool type"
            ))),
            None => Err(Error::bad_arguments(format!(
                "Cannot convert {other} ({}) to a bool setting",
                other.type_name()
            ))),
        },
    }
}

fn to_uint(literal: &Literal) -> Result<u64> {
    let out_of_range = |v: &dyn std::fmt::Display| {
        Error::bad_arguments(format!(
            "Field value {v} is out of range of unsigned long type"
        ))
    };
    match literal {
        Literal::Bool(b) => Ok(u64::from(*b)),
        Literal::String(text) => text.parse::<u64>().map_err(|_| {
            Error::bad_arguments(format!(
                "Cannot parse input: expected an unsigned integer, got '{text}'"
            ))
        }),
        Literal::Number(text) => match literal.as_integer() {
            Some(v) => u64::try_from(v).map_err(|_| out_of_range(&v)),
            None => match text.parse::<f64>() {
                Ok(f) if f.is_finite() && f >= 0.0 && f < u64::MAX as f64 => Ok(f as u64),
                _ => Err(out_of_range(text)),
            },
        },
        other => Err(Error::bad_arguments(format!(
            "Cannot convert {other} ({}) to an unsigned integer setting",
            other.type_name()
        ))),
    }
}

fn to_string(literal: &Literal) -> Result<String> {
    match literal {
        Literal::String(text) => Ok(text.clone()),
        other => Err(Error::bad_arguments(format!(
            "Bad get: has {}, requested String",
            other.type_name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(text: &str) -> Literal {
        Literal::Number(text.to_string())
    }

    #[test]
    fn defaults() {
        let s = Settings::new();
        assert!(s.allow_insert_into_iceberg());
        assert_eq!(s.expire_default_min_snapshots_to_keep(), 1);
        assert_eq!(s.expire_default_max_snapshot_age_ms(), 432_000_000);
        assert_eq!(s.expire_default_max_ref_age_ms(), i64::MAX);
        assert_eq!(s.orphan_files_older_than_seconds(), 259_200);
        assert_eq!(s.commit_max_attempts(), 4);
        assert_eq!(s.get_text("session_timezone").as_deref(), Some(""));
    }

    #[test]
    fn unknown_setting_is_clickhouse_text() {
        let err = Settings::new()
            .set("foo", &number("1"))
            .expect_err("unknown");
        assert_eq!(err.kind(), ErrorKind::UnknownSetting);
        assert_eq!(err.message(), "Unknown setting 'foo'");
        let err = Settings::new()
            .set("max_query_sise", &number("1"))
            .expect_err("misspelled");
        assert_eq!(
            err.message(),
            "Unknown setting 'max_query_sise'. Maybe you meant: ['max_query_size']"
        );
        let err = Settings::new()
            .set("iceberg_use_version_hint", &number("1"))
            .expect_err("table setting");
        assert!(
            err.message()
                .starts_with("Unknown setting 'iceberg_use_version_hint'")
        );
    }

    #[test]
    fn bool_conversions() {
        let mut s = Settings::new();
        s.set("allow_insert_into_iceberg", &number("0")).unwrap();
        assert!(!s.allow_insert_into_iceberg());
        s.set("allow_insert_into_iceberg", &Literal::String("TRUE".into()))
            .unwrap();
        assert!(s.allow_insert_into_iceberg());
        let err = s
            .set("allow_insert_into_iceberg", &number("2"))
            .unwrap_err();
        assert_eq!(err.message(), "Field value 2 is out of range of bool type");
        let err = s
            .set("allow_insert_into_iceberg", &Literal::String("abc".into()))
            .unwrap_err();
        assert_eq!(err.message(), "Cannot parse bool from string 'abc'");
    }

    #[test]
    fn uint_conversions() {
        let mut s = Settings::new();
        let name = "iceberg_orphan_files_older_than_seconds";
        s.set(name, &Literal::String("100".into())).unwrap();
        assert_eq!(s.orphan_files_older_than_seconds(), 100);
        s.set(name, &number("1.5")).unwrap();
        assert_eq!(s.orphan_files_older_than_seconds(), 1);
        s.set(name, &Literal::Bool(true)).unwrap();
        assert_eq!(s.orphan_files_older_than_seconds(), 1);
        let err = s.set(name, &number("-1")).unwrap_err();
        assert_eq!(
            err.message(),
            "Field value -1 is out of range of unsigned long type"
        );
        assert!(s.set(name, &Literal::String("abc".into())).is_err());
    }

    #[test]
    fn counts_that_must_be_positive_refuse_zero() {
        for name in [
            "iceberg_metadata_read_concurrency",
            "iceberg_delete_concurrency",
            "iceberg_commit_max_attempts",
            "iceberg_expire_default_min_snapshots_to_keep",
        ] {
            let mut s = Settings::new();
            let before = s.get_uint(name);
            for zero in [
                number("0"),
                Literal::String("0".into()),
                Literal::Bool(false),
                number("0.5"),
            ] {
                let err = s.set(name, &zero).expect_err(name);
                assert_eq!(err.kind(), ErrorKind::BadArguments, "{name}");
                assert_eq!(
                    err.message(),
                    format!("Setting {name} must be at least 1, got 0"),
                );
                assert_eq!(s.get_uint(name), before, "{name} unchanged");
            }
            s.set(name, &number("1")).unwrap();
            assert_eq!(s.get_uint(name), 1);
            // Engine defaults (the command line's --setting) go through the same check.
            let err = Settings::new()
                .set_all(&[(name.to_string(), Literal::String("0".into()))])
                .expect_err(name);
            assert_eq!(err.kind(), ErrorKind::BadArguments);
        }
    }

    #[test]
    fn time_zone_is_validated() {
        let mut s = Settings::new();
        s.set(
            "session_timezone",
            &Literal::String("America/New_York".into()),
        )
        .unwrap();
        assert_eq!(
            s.session_time_zone(),
            SessionTimeZone::Named(chrono_tz::America::New_York)
        );
        let err = s
            .set("session_timezone", &Literal::String("Nowhere/Zone".into()))
            .unwrap_err();
        assert_eq!(err.message(), "Invalid time zone: Nowhere/Zone");
        let err = s.set("session_timezone", &number("5")).unwrap_err();
        assert_eq!(err.message(), "Bad get: has UInt64, requested String");
        assert_eq!(s.get_string("session_timezone"), "America/New_York");
    }

    #[test]
    fn parser_limits_follow_clickhouse_and_stay_in_range() {
        let mut s = Settings::new();
        assert_eq!((s.max_query_size(), s.max_parser_depth()), (262_144, 1000));
        s.set("max_query_size", &number("0")).unwrap();
        s.set("max_parser_depth", &number("2000")).unwrap();
        assert_eq!((s.max_query_size(), s.max_parser_depth()), (0, 2000));
        for bad in ["0", "2001"] {
            let err = s.set("max_parser_depth", &number(bad)).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BadArguments);
            assert!(err.message().contains("between 1 and 2000"), "{err}");
        }
        assert_eq!(s.max_parser_depth(), 2000, "unchanged");
    }

    #[test]
    fn set_all_is_all_or_nothing() {
        let mut s = Settings::new();
        let assignments = vec![
            ("iceberg_delete_concurrency".to_string(), number("3")),
            ("foo".to_string(), number("1")),
        ];
        assert!(s.set_all(&assignments).is_err());
        assert_eq!(s.delete_concurrency(), 32);
        s.set_all(&assignments[..1]).unwrap();
        assert_eq!(s.delete_concurrency(), 3);
    }

    #[test]
    fn table_settings() {
        let pairs = vec![
            ("iceberg_use_version_hint".to_string(), number("1")),
            ("iceberg_format_version".to_string(), number("3")),
        ];
        let t = Settings::table_from_pairs(&pairs).unwrap();
        assert!(t.get_bool("iceberg_use_version_hint"));
        assert_eq!(t.get_uint("iceberg_format_version"), 3);
        let bad = vec![("iceberg_format_version".to_string(), number("4"))];
        assert!(Settings::table_from_pairs(&bad).is_err());
        let unknown = vec![("allow_insert_into_iceberg".to_string(), number("1"))];
        let err = Settings::table_from_pairs(&unknown).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnknownSetting);
    }
}

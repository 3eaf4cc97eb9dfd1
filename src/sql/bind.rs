//! Binding `EXECUTE` arguments to typed procedure options, before any I/O, so a bad argument
//! changes nothing.
//!
//! Order, as ClickHouse 26.9 does it (observed through chdb): each argument in turn must be a
//! literal ("Argument <n> to <cmd>() must be a literal value"); a positional one must come before
//! every named one and there is at most one (it binds to `expire_before` / `older_than`); a named
//! one must be known and not repeated; parameters with a declared type (`String`, `UInt64`) are
//! type-checked on the spot. Then the values are validated in a fixed order: `expire_before`,
//! `retention_period`, `retain_last`, `snapshot_ids`, `dry_run`, then the `snapshot_ids`
//! combination rule; for `remove_orphan_files`: `older_than` (then "not in the future"), `location`;
//! `dry_run` and `protect_other_tables` (icetrim's own) are `UInt64`, any non-zero value is true.
//! Messages are ClickHouse's, word for word.

use super::ast::{Arg, Literal};
pub use super::bind_args::BindContext;
use super::bind_args::collect;
use super::duration::{DurationError, parse_duration_ms};
use super::timestamp::parse_timestamp_noted;
use crate::error::{Error, Result};
use crate::plan::procedures::{
    EXPIRE_SNAPSHOTS, REMOVE_ORPHAN_FILES, REWRITE_DATA_FILES, REWRITE_MANIFESTS,
};
use crate::plan::{
    ExpireOptions, OrphanOptions, ProcedureCall, RewriteManifestsOptions, check_older_than,
    normalize_location, retain_last_count,
};

const EXPIRE: &str = EXPIRE_SNAPSHOTS.name;
const ORPHANS: &str = REMOVE_ORPHAN_FILES.name;

/// Binds `procedure(args)` to typed options (`BAD_ARGUMENTS` / `CANNOT_PARSE_DATETIME` on bad input).
pub fn bind(procedure: &str, args: &[Arg], context: &BindContext) -> Result<ProcedureCall> {
    bind_noted(procedure, args, context).map(|(call, _)| call)
}

/// [`bind`], with warnings about the arguments: a timestamp that falls in a DST gap or fold of
/// the session time zone (no reading of it keeps the order of wall times, so the instant used is
/// named).
pub fn bind_noted(
    procedure: &str,
    args: &[Arg],
    context: &BindContext,
) -> Result<(ProcedureCall, Vec<String>)> {
    let mut notes = Vec::new();
    let call = match procedure {
        EXPIRE => bind_expire(args, context, &mut notes).map(ProcedureCall::Expire),
        ORPHANS => bind_orphans(args, context, &mut notes).map(ProcedureCall::Orphans),
        other if super::bind_snapshots::is_snapshot_procedure(other) => {
            super::bind_snapshots::bind_snapshot_procedure(other, args, context, &mut notes)
                .map(ProcedureCall::Snapshots)
        }
        name if name == REWRITE_MANIFESTS.name => {
            bind_rewrite_manifests(args).map(ProcedureCall::RewriteManifests)
        }
        name if name == REWRITE_DATA_FILES.name => {
            super::bind_compact::bind_rewrite(args, &context.limits).map(ProcedureCall::Compact)
        }
        other => Err(Error::bad_arguments(format!(
            "Unknown EXECUTE command '{other}' for Iceberg table{}",
            unknown_procedure_hint(other)
        ))),
    }?;
    Ok((call, notes))
}

/// The hint for an unknown procedure: a near spelling, or icetrim's name for another engine's.
pub fn unknown_procedure_hint(name: &str) -> String {
    let names: Vec<&str> = crate::plan::procedures::PROCEDURES
        .iter()
        .map(|p| p.name)
        .collect();
    crate::hints::unknown_procedure(name, &names)
}

/// A timestamp argument in Unix ms; a DST note goes to `notes`, prefixed with the argument's name.
fn timestamp(
    name: &str,
    text: &str,
    context: &BindContext,
    notes: &mut Vec<String>,
) -> Result<i64> {
    let (ms, note) = parse_timestamp_noted(text, &context.time_zone)?;
    notes.extend(note.map(|note| format!("{name} {note}")));
    Ok(ms)
}

fn string_of<'a>(literal: Option<&&'a Literal>) -> Option<&'a str> {
    match literal {
        Some(Literal::String(text)) => Some(text),
        _ => None,
    }
}

fn bind_expire(
    args: &[Arg],
    context: &BindContext,
    notes: &mut Vec<String>,
) -> Result<ExpireOptions> {
    let values = collect(&EXPIRE_SNAPSHOTS, args)?;
    let expire_before_ms = string_of(values.get("expire_before"))
        .map(|text| timestamp("expire_before", text, context, notes))
        .transpose()?;
    let retention_period_ms = values
        .get("retention_period")
        .map(|v| retention_period(v))
        .transpose()?;
    let retain_last = values
        .get("retain_last")
        .map(|v| retain_last(v))
        .transpose()?;
    let snapshot_ids = values
        .get("snapshot_ids")
        .map(|v| snapshot_ids(v))
        .transpose()?;
    let dry_run = values
        .get("dry_run")
        .map(|v| flag(EXPIRE, "dry_run", v))
        .transpose()?;
    let clean_expired_metadata = values
        .get("clean_expired_metadata")
        .map(|v| flag(EXPIRE, "clean_expired_metadata", v))
        .transpose()?;
    let options = ExpireOptions {
        expire_before_ms,
        retention_period_ms,
        retain_last,
        snapshot_ids,
        dry_run: dry_run.unwrap_or(false),
        clean_expired_metadata: clean_expired_metadata.unwrap_or(false),
    };
    options.validate()?;
    Ok(options)
}

fn retention_period(value: &Literal) -> Result<i64> {
    let Literal::String(text) = value else {
        return Err(Error::bad_arguments(
            "expire_snapshots expects 'retention_period' to be a duration string like '3d', '12h', \
             '30m', '15s' or '250ms'",
        ));
    };
    parse_duration_ms(text).map_err(|e| match e {
        DurationError::Empty => {
            Error::bad_arguments("expire_snapshots 'retention_period' cannot be empty")
        }
        DurationError::Negative => {
            Error::bad_arguments("expire_snapshots expects 'retention_period' to be non-negative")
        }
        DurationError::Invalid => Error::bad_arguments(format!(
            "expire_snapshots: invalid duration '{text}' for 'retention_period'. {}",
            super::duration::accepted_forms_hint(text)
        )),
    })
}

fn retain_last(value: &Literal) -> Result<i32> {
    let count = value.as_integer().ok_or_else(|| {
        Error::bad_arguments("expire_snapshots expects 'retain_last' to be an integer literal")
    })?;
    retain_last_count(count)
}

fn snapshot_ids(value: &Literal) -> Result<Vec<i64>> {
    let Literal::Array(items) = value else {
        return Err(Error::bad_arguments(
            "expire_snapshots expects 'snapshot_ids' to be an array literal",
        ));
    };
    items
        .integers()
        .map(|id| {
            let id = id.ok_or_else(|| {
                Error::bad_arguments(
                    "expire_snapshots expects 'snapshot_ids' to be an integer literal",
                )
            })?;
            i64::try_from(id).map_err(|_| {
                Error::bad_arguments(format!(
                    "expire_snapshots 'snapshot_ids' is too large: {id}"
                ))
            })
        })
        .collect()
}

/// A flag (`dry_run`, `clean_expired_metadata`): `true`/`false`, any integer (non-zero is true),
/// or the strings `'true'`/`'false'` in any case.
fn flag(command: &str, name: &str, value: &Literal) -> Result<bool> {
    let flag = match value {
        Literal::Bool(b) => Some(*b),
        Literal::String(text) if text.eq_ignore_ascii_case("true") => Some(true),
        Literal::String(text) if text.eq_ignore_ascii_case("false") => Some(false),
        other => other.as_integer().map(|v| v != 0),
    };
    flag.ok_or_else(|| {
        Error::bad_arguments(format!(
            "{command} expects '{name}' to be a boolean or integer literal"
        ))
    })
}

/// `rewrite_manifests([spec_id,] [target_manifest_size_bytes = N,] [dry_run = 1])`: `spec_id` is
/// also positional (`UInt64` up to `i32::MAX`), `target_manifest_size_bytes` a positive `UInt64`.
fn bind_rewrite_manifests(args: &[Arg]) -> Result<RewriteManifestsOptions> {
    let values = collect(&REWRITE_MANIFESTS, args)?;
    let spec_id = values
        .get("spec_id")
        .and_then(|v| v.as_integer())
        .map(|id| {
            i32::try_from(id).map_err(|_| {
                Error::bad_arguments(format!("rewrite_manifests 'spec_id' is too large: {id}"))
            })
        })
        .transpose()?;
    let target_manifest_size_bytes = values
        .get("target_manifest_size_bytes")
        .and_then(|v| v.as_integer())
        .map(|bytes| {
            i64::try_from(bytes).map_err(|_| {
                Error::bad_arguments(format!(
                    "rewrite_manifests 'target_manifest_size_bytes' is too large: {bytes}"
                ))
            })
        })
        .transpose()?;
    let dry_run = values
        .get("dry_run")
        .map(|v| flag(REWRITE_MANIFESTS.name, "dry_run", v))
        .transpose()?;
    let options = RewriteManifestsOptions {
        spec_id,
        target_manifest_size_bytes,
        dry_run: dry_run.unwrap_or(false),
        min_manifest_count: None,
    };
    options.validate()?;
    Ok(options)
}

fn bind_orphans(
    args: &[Arg],
    context: &BindContext,
    notes: &mut Vec<String>,
) -> Result<OrphanOptions> {
    let values = collect(&REMOVE_ORPHAN_FILES, args)?;
    let older_than_ms = string_of(values.get("older_than"))
        .map(|text| timestamp("older_than", text, context, notes))
        .transpose()?;
    if let Some(ms) = older_than_ms {
        check_older_than(ms, context.now_ms)?;
    }
    let location = string_of(values.get("location"))
        .map(normalize_location)
        .transpose()?
        .flatten();
    let dry_run = values
        .get("dry_run")
        .and_then(|v| v.as_integer())
        .is_some_and(|v| v != 0);
    let protect_other_tables = values
        .get("protect_other_tables")
        .and_then(|v| v.as_integer())
        .is_some_and(|v| v != 0);
    let options = OrphanOptions {
        older_than_ms,
        location,
        dry_run,
        protect_other_tables,
    };
    options.validate(context.now_ms)?;
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ast::ArgValue;
    use crate::sql::limits::ParseLimits;
    use crate::sql::timestamp::SessionTimeZone;

    fn named(name: &str, literal: Literal) -> Arg {
        Arg {
            name: Some(name.to_string()),
            value: ArgValue::Literal(literal),
        }
    }

    #[test]
    fn location_normalisation() {
        assert_eq!(normalize_location(""), Ok(None));
        assert_eq!(normalize_location("./"), Ok(None));
        assert_eq!(normalize_location("./data/"), Ok(Some("data".into())));
        assert_eq!(normalize_location("a//./b"), Ok(Some("a/b".into())));
        assert!(normalize_location("/etc").is_err());
        assert!(normalize_location("a/../b").is_err());
        assert!(normalize_location("..").is_err());
    }

    #[test]
    fn positional_argument_binds_to_the_first_parameter() {
        let args = [Arg {
            name: None,
            value: ArgValue::Literal(Literal::String("x".into())),
        }];
        let values = collect(&EXPIRE_SNAPSHOTS, &args).unwrap();
        assert_eq!(
            values.keys().copied().collect::<Vec<_>>(),
            ["expire_before"]
        );
        let values = collect(&REMOVE_ORPHAN_FILES, &args).unwrap();
        assert_eq!(values.keys().copied().collect::<Vec<_>>(), ["older_than"]);
    }

    #[test]
    fn orphan_dry_run_accepts_any_unsigned_integer() {
        let context = BindContext {
            now_ms: 0,
            time_zone: SessionTimeZone::System,
            limits: ParseLimits::default(),
        };
        let call = |value: &str| {
            bind(
                ORPHANS,
                &[named("dry_run", Literal::Number(value.into()))],
                &context,
            )
        };
        assert_eq!(call("0").map(|c| c.dry_run()), Ok(false));
        assert_eq!(call("18446744073709551615").map(|c| c.dry_run()), Ok(true));
        assert!(call("18446744073709551616").is_err());
    }

    #[test]
    fn protect_other_tables_is_an_unsigned_integer_flag() {
        let context = BindContext {
            now_ms: 0,
            time_zone: SessionTimeZone::System,
            limits: ParseLimits::default(),
        };
        let call =
            |literal: Literal| bind(ORPHANS, &[named("protect_other_tables", literal)], &context);
        let protect = |c: ProcedureCall| match c {
            ProcedureCall::Orphans(o) => o.protect_other_tables,
            other => panic!("{other:?}"),
        };
        assert_eq!(call(Literal::Number("0".into())).map(protect), Ok(false));
        assert_eq!(call(Literal::Number("1".into())).map(protect), Ok(true));
        assert_eq!(call(Literal::Number("7".into())).map(protect), Ok(true));
        let e = call(Literal::String("1".into())).unwrap_err();
        assert_eq!(
            e.message(),
            "Parameter 'protect_other_tables' for remove_orphan_files has wrong type (got String, \
             expected UInt64)"
        );
        let none = bind(ORPHANS, &[], &context).map(protect);
        assert_eq!(none, Ok(false));
    }
}

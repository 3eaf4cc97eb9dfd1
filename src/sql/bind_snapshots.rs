//! Binding the arguments of the snapshot-management procedures, before any I/O.
//!
//! Each procedure takes its parameters positionally, in Spark's order, or by Spark's names
//! (`key = value` / `key => value`), positional ones first:
//!
//! | procedure | parameters (positional order) | required |
//! |---|---|---|
//! | `rollback_to_snapshot` | `snapshot_id` Int64 | all |
//! | `rollback_to_timestamp` | `timestamp` String (session time zone, as `older_than`) | all |
//! | `set_current_snapshot` | `snapshot_id` Int64, `ref` String | exactly one of the two |
//! | `fast_forward` | `branch` String, `to` String | all |
//! | `cherrypick_snapshot` | `snapshot_id` Int64 | all |
//! | `publish_changes` | `wap_id` String | all |
//!
//! Errors (`BAD_ARGUMENTS` unless said): a non-literal argument; a positional argument after a
//! named one; more positional arguments than parameters (`NUMBER_OF_ARGUMENTS_DOESNT_MATCH`); an
//! unknown or repeated name; a value of the wrong type; a required parameter missing
//! (`NUMBER_OF_ARGUMENTS_DOESNT_MATCH`); both or neither of `snapshot_id` and `ref`. The messages
//! follow `bind.rs` (ClickHouse's) where the rule is the same.

use std::collections::BTreeMap;

use super::ast::{AlterAction, Arg, Literal};
use super::bind_args::BindContext;
use super::timestamp::parse_timestamp_noted;
use crate::error::{Error, ErrorKind, Result};
use crate::plan::procedures::{Positional, procedure as procedure_spec};
use crate::plan::snapshots::retention_ms;
use crate::plan::snapshots::{
    CHERRYPICK_SNAPSHOT, FAST_FORWARD, PUBLISH_CHANGES, ROLLBACK_TO_SNAPSHOT,
    ROLLBACK_TO_TIMESTAMP, SET_CURRENT_SNAPSHOT,
};
use crate::plan::{RefRetention, SnapshotProcedure, SnapshotSelector, TableChange};

/// Whether `procedure` is one of the snapshot-management procedures.
pub fn is_snapshot_procedure(procedure: &str) -> bool {
    procedure_spec(procedure).is_some_and(|p| p.positional == Positional::InOrder)
}

/// A bound value.
enum Value<'a> {
    Int(i64),
    Str(&'a str),
}

/// The arguments of `command` by parameter name ([`super::bind_args::collect`] against its table in
/// `plan::procedures`), as the values the parameters' types promise.
fn collect<'a>(command: &str, args: &'a [Arg]) -> Result<BTreeMap<&'static str, Value<'a>>> {
    let spec = procedure_spec(command)
        .filter(|p| p.positional == Positional::InOrder)
        .ok_or_else(|| Error::logical(format!("{command} is not a snapshot procedure")))?;
    let literals = super::bind_args::collect(spec, args)?;
    let mut values = BTreeMap::new();
    for (name, literal) in literals {
        let value = match literal {
            Literal::String(text) => Value::Str(text),
            // `collect` checked the type: an Int64 parameter holds an integer in range.
            other => match other.as_integer().and_then(|n| i64::try_from(n).ok()) {
                Some(n) => Value::Int(n),
                None => {
                    return Err(Error::logical(format!(
                        "{command}: parameter '{name}' passed its type check but is no Int64"
                    )));
                }
            },
        };
        values.insert(name, value);
    }
    Ok(values)
}

fn missing(command: &str, name: &str) -> Error {
    Error::new(
        ErrorKind::NumberOfArgumentsDoesntMatch,
        format!("{command} requires argument '{name}'"),
    )
}

fn int(values: &BTreeMap<&str, Value<'_>>, command: &str, name: &str) -> Result<i64> {
    match values.get(name) {
        Some(Value::Int(n)) => Ok(*n),
        _ => Err(missing(command, name)),
    }
}

fn text(values: &BTreeMap<&str, Value<'_>>, command: &str, name: &str) -> Result<String> {
    match values.get(name) {
        Some(Value::Str(s)) => Ok((*s).to_string()),
        _ => Err(missing(command, name)),
    }
}

/// Bind `procedure(args)`; a DST note about the timestamp goes to `notes`.
pub fn bind_snapshot_procedure(
    procedure: &str,
    args: &[Arg],
    context: &BindContext,
    notes: &mut Vec<String>,
) -> Result<SnapshotProcedure> {
    let values = collect(procedure, args)?;
    let call = match procedure {
        ROLLBACK_TO_SNAPSHOT => SnapshotProcedure::RollbackToSnapshot {
            snapshot_id: int(&values, procedure, "snapshot_id")?,
        },
        CHERRYPICK_SNAPSHOT => SnapshotProcedure::Cherrypick {
            snapshot_id: int(&values, procedure, "snapshot_id")?,
        },
        ROLLBACK_TO_TIMESTAMP => {
            let raw = text(&values, procedure, "timestamp")?;
            let (timestamp_ms, note) = parse_timestamp_noted(&raw, &context.time_zone)?;
            notes.extend(note.map(|n| format!("timestamp {n}")));
            SnapshotProcedure::RollbackToTimestamp { timestamp_ms }
        }
        SET_CURRENT_SNAPSHOT => {
            let selector = match (values.get("snapshot_id"), values.get("ref")) {
                (Some(Value::Int(id)), None) => SnapshotSelector::Id(*id),
                (None, Some(Value::Str(name))) => SnapshotSelector::Ref((*name).to_string()),
                _ => {
                    return Err(Error::bad_arguments(
                        "set_current_snapshot: either snapshot_id or ref must be provided, not \
                         both",
                    ));
                }
            };
            SnapshotProcedure::SetCurrentSnapshot(selector)
        }
        FAST_FORWARD => SnapshotProcedure::FastForward {
            branch: text(&values, procedure, "branch")?,
            to: text(&values, procedure, "to")?,
        },
        PUBLISH_CHANGES => SnapshotProcedure::PublishChanges {
            wap_id: text(&values, procedure, "wap_id")?,
        },
        other => {
            return Err(Error::logical(format!(
                "{other} is not a snapshot procedure"
            )));
        }
    };
    call.validate()?;
    Ok(call)
}

/// Bind an `ALTER TABLE` ref or property statement to its typed form, validated
/// ([`TableChange::validate`]): retention amounts in milliseconds (overflow is `BAD_ARGUMENTS`),
/// a count of snapshots within `Int32`.
pub fn bind_alter(action: &AlterAction) -> Result<TableChange> {
    let change = match action {
        AlterAction::PutRef {
            kind,
            mode,
            name,
            as_of,
            retain,
            min_snapshots,
            snapshot_age,
        } => TableChange::PutRef {
            kind: *kind,
            mode: *mode,
            name: name.clone(),
            snapshot_id: *as_of,
            retention: RefRetention {
                max_ref_age_ms: retain.map(|(n, u)| retention_ms(n, u)).transpose()?,
                min_snapshots_to_keep: min_snapshots
                    .map(|n| {
                        i32::try_from(n).map_err(|_| {
                            Error::bad_arguments(format!(
                                "The number of snapshots to keep is too large: {n}"
                            ))
                        })
                    })
                    .transpose()?,
                max_snapshot_age_ms: snapshot_age.map(|(n, u)| retention_ms(n, u)).transpose()?,
            },
        },
        AlterAction::DropRef {
            kind,
            name,
            if_exists,
        } => TableChange::DropRef {
            kind: *kind,
            name: name.clone(),
            if_exists: *if_exists,
        },
        AlterAction::SetProperties(pairs) => TableChange::SetProperties(pairs.clone()),
        AlterAction::UnsetProperties { if_exists, keys } => TableChange::UnsetProperties {
            keys: keys.clone(),
            if_exists: *if_exists,
        },
    };
    change.validate()?;
    Ok(change)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ast::ArgValue;
    use crate::time_zone::SessionTimeZone;

    fn ctx() -> BindContext {
        BindContext {
            now_ms: 0,
            time_zone: SessionTimeZone::Named(chrono_tz::UTC),
            limits: Default::default(),
        }
    }

    fn pos(l: Literal) -> Arg {
        Arg {
            name: None,
            value: ArgValue::Literal(l),
        }
    }

    fn named(n: &str, l: Literal) -> Arg {
        Arg {
            name: Some(n.into()),
            value: ArgValue::Literal(l),
        }
    }

    fn num(n: &str) -> Literal {
        Literal::Number(n.into())
    }

    fn s(t: &str) -> Literal {
        Literal::String(t.into())
    }

    fn bind(p: &str, args: &[Arg]) -> Result<SnapshotProcedure> {
        bind_snapshot_procedure(p, args, &ctx(), &mut Vec::new())
    }

    #[test]
    fn positional_and_named_forms_agree() {
        let a = bind(ROLLBACK_TO_SNAPSHOT, &[pos(num("7"))]).unwrap();
        let b = bind(ROLLBACK_TO_SNAPSHOT, &[named("snapshot_id", num("7"))]).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, SnapshotProcedure::RollbackToSnapshot { snapshot_id: 7 });
        let ff = bind(FAST_FORWARD, &[pos(s("main")), named("to", s("audit"))]).unwrap();
        assert_eq!(
            ff,
            SnapshotProcedure::FastForward {
                branch: "main".into(),
                to: "audit".into()
            }
        );
        let t = bind(ROLLBACK_TO_TIMESTAMP, &[pos(s("2026-11-01 00:00:00"))]).unwrap();
        assert_eq!(
            t,
            SnapshotProcedure::RollbackToTimestamp {
                timestamp_ms: 1_793_491_200_000
            }
        );
        let neg = bind(CHERRYPICK_SNAPSHOT, &[pos(num("-5"))]).unwrap();
        assert_eq!(neg, SnapshotProcedure::Cherrypick { snapshot_id: -5 });
    }

    #[test]
    fn argument_errors() {
        let kind = |r: Result<SnapshotProcedure>| r.unwrap_err().kind();
        assert_eq!(
            kind(bind(ROLLBACK_TO_SNAPSHOT, &[])),
            ErrorKind::NumberOfArgumentsDoesntMatch
        );
        assert_eq!(
            kind(bind(ROLLBACK_TO_SNAPSHOT, &[pos(num("1")), pos(num("2"))])),
            ErrorKind::NumberOfArgumentsDoesntMatch
        );
        let e = bind(ROLLBACK_TO_SNAPSHOT, &[pos(s("1"))]).unwrap_err();
        assert_eq!(
            e.message(),
            "Parameter 'snapshot_id' for rollback_to_snapshot has wrong type (got String, \
             expected Int64)"
        );
        let e = bind(FAST_FORWARD, &[named("to", s("a")), pos(s("b"))]).unwrap_err();
        assert!(e.message().contains("Positional arguments must precede"));
        let e = bind(PUBLISH_CHANGES, &[named("wap", s("x"))]).unwrap_err();
        assert_eq!(e.message(), "Unknown parameter 'wap' for publish_changes");
        let e = bind(
            SET_CURRENT_SNAPSHOT,
            &[named("snapshot_id", num("1")), named("ref", s("b"))],
        )
        .unwrap_err();
        assert!(e.message().contains("not both"));
        assert!(bind(SET_CURRENT_SNAPSHOT, &[]).is_err());
        assert_eq!(
            bind(SET_CURRENT_SNAPSHOT, &[named("ref", s("b"))]).unwrap(),
            SnapshotProcedure::SetCurrentSnapshot(SnapshotSelector::Ref("b".into()))
        );
        let e = bind(CHERRYPICK_SNAPSHOT, &[pos(num("9223372036854775808"))]).unwrap_err();
        assert!(e.message().contains("Int64 range"), "{}", e.message());
        let e = bind(CHERRYPICK_SNAPSHOT, &[pos(num("1.5"))]).unwrap_err();
        assert!(e.message().contains("got Float64"), "{}", e.message());
        let e = bind(FAST_FORWARD, &[pos(s("main"))]).unwrap_err();
        assert_eq!(e.message(), "fast_forward requires argument 'to'");
        let e = bind(ROLLBACK_TO_TIMESTAMP, &[pos(s("yesterday"))]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CannotParseDatetime);
        let e = bind(
            CHERRYPICK_SNAPSHOT,
            &[Arg {
                name: None,
                value: ArgValue::Expr("now()".into()),
            }],
        )
        .unwrap_err();
        assert!(e.message().contains("must be a literal value"));
    }
}

//! What every procedure's binder shares: the session facts binding needs ([`BindContext`]) and
//! the collection of `EXECUTE` arguments against a procedure's parameter table
//! (`plan::procedures`): literals only, positional arguments first and bound as the procedure
//! says, names known and not repeated, declared types checked on the spot. `bind.rs` dispatches
//! to the procedures' binders; they all collect here (none imports another).

use std::collections::BTreeMap;

use super::ast::{Arg, ArgValue, Literal};
use super::limits::ParseLimits;
use super::timestamp::SessionTimeZone;
use crate::error::{Error, ErrorKind, Result};
use crate::plan::procedures::{Param, ParamType, Positional, ProcedureSpec};

/// What binding needs to know about the session.
#[derive(Debug, Clone, Copy)]
pub struct BindContext {
    /// "Now" for the future-timestamp check (Unix ms).
    pub now_ms: i64,
    /// The zone local timestamps are read in.
    pub time_zone: SessionTimeZone,
    /// The limits a predicate given as a string (`rewrite_data_files`' `where`) is read under.
    pub limits: ParseLimits,
}

/// Collects arguments by parameter name against `spec` (the procedure's table in
/// `plan::procedures`), applying the per-argument rules of the module comment.
pub(super) fn collect<'a>(
    spec: &ProcedureSpec,
    args: &'a [Arg],
) -> Result<BTreeMap<&'static str, &'a Literal>> {
    let command = spec.name;
    let params = spec.params;
    let mut values = BTreeMap::new();
    let mut seen_named = false;
    let mut positional = 0;
    for (index, arg) in args.iter().enumerate() {
        let ArgValue::Literal(literal) = &arg.value else {
            return Err(Error::bad_arguments(format!(
                "Argument {} to {command}() must be a literal value",
                index + 1
            )));
        };
        let param = match &arg.name {
            None => {
                if seen_named {
                    return Err(Error::bad_arguments(format!(
                        "Positional arguments must precede named arguments in {command}()"
                    )));
                }
                positional += 1;
                positional_param(spec, positional, args)?
            }
            Some(name) => {
                seen_named = true;
                params.iter().find(|p| p.name == name).ok_or_else(|| {
                    let names: Vec<&str> = params.iter().map(|p| p.name).collect();
                    let hint = crate::hints::unknown_parameter(command, name, &names);
                    Error::bad_arguments(format!("Unknown parameter '{name}' for {command}{hint}"))
                })?
            }
        };
        if values.contains_key(param.name) {
            return Err(Error::bad_arguments(format!(
                "Duplicate parameter '{}' for {command}()",
                param.name
            )));
        }
        check_type(command, param, literal)?;
        values.insert(param.name, literal);
    }
    Ok(values)
}

/// The parameter the `n`-th positional argument (1-based) binds to.
fn positional_param<'s>(spec: &'s ProcedureSpec, n: usize, args: &[Arg]) -> Result<&'s Param> {
    let command = spec.name;
    match spec.positional {
        Positional::First => match spec.params.first() {
            Some(first) if n == 1 => Ok(first),
            _ => Err(Error::bad_arguments(format!(
                "{command} accepts at most 1 positional argument(s)"
            ))),
        },
        Positional::InOrder => spec.params.get(n - 1).ok_or_else(|| {
            Error::new(
                ErrorKind::NumberOfArgumentsDoesntMatch,
                format!(
                    "{command} takes at most {} positional argument(s), got {}",
                    spec.params.len(),
                    args.iter().filter(|a| a.name.is_none()).count()
                ),
            )
        }),
    }
}

fn check_type(command: &str, param: &Param, literal: &Literal) -> Result<()> {
    let ok = match param.ty {
        ParamType::Any => true,
        ParamType::String => matches!(literal, Literal::String(_)),
        ParamType::UInt64 => literal.type_name() == "UInt64",
        ParamType::Int64 => match literal {
            Literal::Number(_) => match literal.as_integer() {
                Some(n) if i64::try_from(n).is_ok() => true,
                Some(_) => {
                    return Err(Error::bad_arguments(format!(
                        "Parameter '{}' for {command} is out of the Int64 range: {literal}",
                        param.name
                    )));
                }
                None => false,
            },
            _ => false,
        },
    };
    if ok {
        return Ok(());
    }
    let expected = match param.ty {
        ParamType::UInt64 => "UInt64",
        ParamType::Int64 => "Int64",
        _ => "String",
    };
    Err(Error::bad_arguments(format!(
        "Parameter '{}' for {command} has wrong type (got {}, expected {expected})",
        param.name,
        literal.type_name()
    )))
}

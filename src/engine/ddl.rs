//! Table definitions from `CREATE TABLE`, and back: the `SHOW CREATE TABLE` text.
//!
//! Engine arguments are checked against ClickHouse's signatures (`IcebergLocal(path)`,
//! `IcebergS3(url [, NOSIGN | key, secret [, token]])`, `IcebergAzure(conn|url, container, path
//! [, account, key])`), all string literals. A URL argument that carries credentials
//! (`http://key:secret@host/...`) is refused without repeating them. The local path is stored
//! normalised: `.` components, doubled and trailing slashes dropped (`/a/./b/` → `/a/b`, also
//! after `file://`); a `..` component, a relative path or the root itself is refused. Table settings are validated with
//! [`Settings::table_from_pairs`] and stored as their normalized text (`1`/`0` for Bool, digits for
//! UInt, the raw text for String); [`table_settings`] reads them back. Column definitions are kept one
//! per line as the parser printed them.
//!
//! `SHOW CREATE TABLE` prints what ClickHouse 26.9 prints (observed through chdb): the qualified name,
//! the column list one backquoted column a line, `ENGINE = ...` and `SETTINGS ...` each on a line,
//! with secrets masked ([`TableDef::masked_args`]).

use std::collections::BTreeMap;

use super::registry::{EngineArg, TableDef};
use crate::error::{Error, Result};
use crate::io::check_engine_urls;
use crate::settings::{SettingType, Settings, TABLE_SETTINGS};
use crate::sql::{self, CreateTable, EngineName, Literal, TableName};

/// The definition `create` registers, in `current_database` unless it names one.
pub fn table_def(create: &CreateTable, current_database: &str) -> Result<TableDef> {
    let engine = create.engine.name;
    let args = create
        .engine
        .args
        .iter()
        .enumerate()
        .map(|(i, arg)| engine_arg(engine, i, arg))
        .collect::<Result<Vec<_>>>()?;
    check_arity(engine, &args)?;
    let texts: Vec<&str> = args
        .iter()
        .filter_map(|arg| match arg {
            EngineArg::Str(text) => Some(text.as_str()),
            EngineArg::NoSign => None,
        })
        .collect();
    check_engine_urls(engine.as_str(), &texts)?;
    let args = if engine == EngineName::IcebergLocal {
        args.into_iter()
            .map(|arg| match arg {
                EngineArg::Str(path) => normalize_local_path(&path).map(EngineArg::Str),
                other => Ok(other),
            })
            .collect::<Result<Vec<_>>>()?
    } else {
        args
    };
    let validated = Settings::table_from_pairs(&create.settings)?;
    let settings: BTreeMap<String, String> = create
        .settings
        .iter()
        .filter_map(|(name, _)| Some((name.clone(), validated.get_text(name)?)))
        .collect();
    Ok(TableDef {
        database: create
            .name
            .database
            .clone()
            .unwrap_or_else(|| current_database.to_string()),
        name: create.name.table.clone(),
        engine: engine.as_str().to_string(),
        args,
        settings,
        columns: create.columns.as_ref().map(|columns| columns.join("\n")),
    })
}

/// The warnings of a `CREATE TABLE` that succeeds: settings accepted because ClickHouse scripts set
/// them, but that do nothing here.
///
/// `iceberg_format_version` is the format version ClickHouse gives a table it creates (it writes
/// the first metadata file with it, and only when the path has none yet); an existing table is read
/// at the `format-version` its metadata file records. icetrim never creates a table, so the setting
/// is kept (and shown by `SHOW CREATE TABLE`) but acts on nothing. The table is not read here, so its
/// own version is not named.
pub(crate) fn create_warnings(create: &CreateTable) -> Vec<String> {
    create
        .settings
        .iter()
        .filter(|(name, _)| name == "iceberg_format_version")
        .map(|(name, value)| {
            format!(
                "Setting {name} = {value} has no effect on an existing table: icetrim never \
                 creates tables, and reads and commits each table at the format-version its \
                 metadata file records"
            )
        })
        .collect()
}

/// The table settings of `def` as typed [`Settings`] (defaults for those not given).
pub fn table_settings(def: &TableDef) -> Result<Settings> {
    let mut settings = Settings::table_defaults();
    for (name, text) in &def.settings {
        settings
            .set(name, &Literal::String(text.clone()))
            .map_err(|e| {
                e.context(format!(
                    "Table {}.{} has an invalid value for setting {name}",
                    def.database, def.name
                ))
            })?;
    }
    Ok(settings)
}

fn engine_arg(engine: EngineName, index: usize, arg: &sql::EngineArg) -> Result<EngineArg> {
    match arg {
        sql::EngineArg::Literal(Literal::String(text)) => Ok(EngineArg::Str(text.clone())),
        sql::EngineArg::NoSign if engine == EngineName::IcebergS3 && index == 1 => {
            Ok(EngineArg::NoSign)
        }
        sql::EngineArg::NoSign => Err(Error::bad_arguments(format!(
            "NOSIGN is only accepted as the second argument of IcebergS3, found it as argument {} \
             of {}",
            index + 1,
            engine.as_str()
        ))),
        sql::EngineArg::Literal(other) => Err(Error::bad_arguments(format!(
            "Argument {} of {} must be a string literal, got {other}",
            index + 1,
            engine.as_str()
        ))),
    }
}

/// The `IcebergLocal` path with `.` components, doubled and trailing slashes dropped, in its own
/// spelling (`/x`, `file:///x`, `file:/x`, `file://localhost/x`); `..`, a relative path and the
/// root are refused (object_store refuses `.` and `..` segments only when the table is read).
pub(crate) fn normalize_local_path(path: &str) -> Result<String> {
    let lower = path.to_ascii_lowercase();
    let prefix_len = if path.starts_with('/') {
        0
    } else if lower.starts_with("file://localhost/") {
        "file://localhost".len()
    } else if lower.starts_with("file:///") {
        "file://".len()
    } else if lower.starts_with("file:/") {
        "file:".len()
    } else {
        return Err(Error::bad_arguments(format!(
            "IcebergLocal: the table path '{path}' must be absolute (/path or file:///path)"
        )));
    };
    let (prefix, rest) = path.split_at(prefix_len);
    let mut components = Vec::new();
    for component in rest.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                return Err(Error::bad_arguments(format!(
                    "IcebergLocal: the table path '{path}' has a '..' component; give the path \
                     without it"
                )));
            }
            other => components.push(other),
        }
    }
    if components.is_empty() {
        return Err(Error::bad_arguments(format!(
            "IcebergLocal: the table path '{path}' names the root folder; give the table's folder"
        )));
    }
    Ok(format!("{prefix}/{}", components.join("/")))
}

fn check_arity(engine: EngineName, args: &[EngineArg]) -> Result<()> {
    let no_sign = matches!(args.get(1), Some(EngineArg::NoSign));
    let (ok, signature) = match engine {
        EngineName::IcebergLocal => (args.len() == 1, "IcebergLocal(path)"),
        EngineName::IcebergS3 => (
            if no_sign {
                args.len() == 2
            } else {
                matches!(args.len(), 1 | 3 | 4)
            },
            "IcebergS3(url [, NOSIGN | access_key_id, secret_access_key [, session_token]])",
        ),
        EngineName::IcebergAzure => (
            matches!(args.len(), 3 | 5),
            "IcebergAzure(connection_string | storage_account_url, container, blobpath \
             [, account_name, account_key])",
        ),
    };
    if ok {
        return Ok(());
    }
    Err(Error::bad_arguments(format!(
        "Storage {} got {} argument(s); its signature is {signature}",
        engine.as_str(),
        args.len()
    )))
}

/// The `SHOW CREATE TABLE` text of `def`, secrets masked.
pub fn show_create(def: &TableDef) -> String {
    let name = TableName {
        database: Some(def.database.clone()),
        table: def.name.clone(),
    };
    let mut out = format!("CREATE TABLE {name}");
    if let Some(columns) = &def.columns {
        let lines: Vec<String> = columns
            .lines()
            .map(|column| format!("    {}", quote_column_name(column)))
            .collect();
        out.push_str(&format!("\n(\n{}\n)", lines.join(",\n")));
    }
    let args: Vec<String> = def
        .masked_args()
        .iter()
        .map(|arg| match arg {
            EngineArg::Str(text) => Literal::String(text.clone()).to_string(),
            EngineArg::NoSign => "NOSIGN".to_string(),
        })
        .collect();
    out.push_str(&format!("\nENGINE = {}({})", def.engine, args.join(", ")));
    if !def.settings.is_empty() {
        let settings: Vec<String> = def
            .settings
            .iter()
            .map(|(name, text)| format!("{name} = {}", setting_literal(name, text)))
            .collect();
        out.push_str(&format!("\nSETTINGS {}", settings.join(", ")));
    }
    out
}

/// A column definition with its name backquoted, as ClickHouse prints it (`id Int64` →
/// `` `id` Int64 ``); a name that is already quoted stays as written.
fn quote_column_name(column: &str) -> String {
    if column.starts_with('`') || column.starts_with('"') {
        return column.to_string();
    }
    match column.split_once(' ') {
        Some((name, rest)) => format!("`{name}` {rest}"),
        None => format!("`{column}`"),
    }
}

fn setting_literal(name: &str, text: &str) -> String {
    let is_string = TABLE_SETTINGS
        .iter()
        .any(|def| def.name == name && def.ty == SettingType::String);
    if is_string {
        Literal::String(text.to_string()).to_string()
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::sql::{Statement, parse_statement};

    fn create(sql: &str) -> CreateTable {
        match parse_statement(sql).unwrap() {
            Statement::CreateTable(create) => create,
            other => panic!("not a CREATE TABLE: {other}"),
        }
    }

    #[test]
    fn show_create_matches_clickhouse_layout() {
        let def = table_def(
            &create(
                "CREATE TABLE t (id Int64, s String) ENGINE = IcebergLocal('/tmp/chx/t') \
                 SETTINGS iceberg_use_version_hint = true",
            ),
            "default",
        )
        .unwrap();
        assert_eq!(
            show_create(&def),
            "CREATE TABLE default.t\n(\n    `id` Int64,\n    `s` String\n)\n\
             ENGINE = IcebergLocal('/tmp/chx/t')\nSETTINGS iceberg_use_version_hint = 1"
        );
        assert!(
            table_settings(&def)
                .unwrap()
                .get_bool("iceberg_use_version_hint")
        );
    }

    #[test]
    fn show_create_masks_secrets_and_quotes_strings() {
        let def = table_def(
            &create(
                "CREATE TABLE db.u ENGINE = IcebergS3('s3://b/t/', 'AKIA', 'secret', 'tok') \
                 SETTINGS iceberg_metadata_file_path = 'metadata/v2.metadata.json'",
            ),
            "default",
        )
        .unwrap();
        assert_eq!(def.database, "db");
        let text = show_create(&def);
        assert_eq!(
            text,
            "CREATE TABLE db.u\nENGINE = IcebergS3('s3://b/t/', 'AKIA', '[HIDDEN]', '[HIDDEN]')\n\
             SETTINGS iceberg_metadata_file_path = 'metadata/v2.metadata.json'"
        );
        assert!(!text.contains("secret"));
    }

    #[test]
    fn credentials_inside_urls_are_refused_without_echoing_them() {
        for bad in [
            "CREATE TABLE t ENGINE = IcebergS3('http://KEY:S3CR3T@127.0.0.1:9000/b/t/')",
            "CREATE TABLE t ENGINE = IcebergS3('https://KEY:S3CR3T@b.s3.amazonaws.com/t/', NOSIGN)",
            "CREATE TABLE t ENGINE = IcebergS3('s3://KEY:S3CR3T@bucket/t/')",
            "CREATE TABLE t ENGINE = IcebergS3('http://S3CR3T@127.0.0.1:9000/b/t/', 'k', 's')",
            "CREATE TABLE t ENGINE = IcebergAzure('https://acct:S3CR3T@acct.blob.core.windows.net', 'c', 't')",
            "CREATE TABLE t ENGINE = IcebergAzure('DefaultEndpointsProtocol=http;AccountName=a;\
             BlobEndpoint=http://a:S3CR3T@127.0.0.1:10000/a', 'c', 't')",
            "CREATE TABLE t ENGINE = IcebergLocal('file://u:S3CR3T@localhost/w/t')",
        ] {
            let e = table_def(&create(bad), "default").expect_err(bad);
            assert_eq!(e.kind(), ErrorKind::BadArguments, "{bad}");
            assert!(!e.message().contains("S3CR3T"), "{bad}: {}", e.message());
            assert!(
                e.message().contains("credentials"),
                "{bad}: {}",
                e.message()
            );
        }
        // An `@` in the path is not userinfo.
        table_def(
            &create("CREATE TABLE t ENGINE = IcebergS3('http://127.0.0.1:9000/b/t@1/')"),
            "default",
        )
        .unwrap();
    }

    #[test]
    fn local_paths_are_normalised_or_refused_at_create() {
        let path = |sql: &str| match &table_def(&create(sql), "default").unwrap().args[0] {
            EngineArg::Str(p) => p.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            path("CREATE TABLE t ENGINE = IcebergLocal('/a/./b')"),
            "/a/b"
        );
        assert_eq!(
            path("CREATE TABLE t ENGINE = IcebergLocal('/a//b/')"),
            "/a/b"
        );
        assert_eq!(
            path("CREATE TABLE t ENGINE = IcebergLocal('/a/b/.')"),
            "/a/b"
        );
        assert_eq!(
            path("CREATE TABLE t ENGINE = IcebergLocal('file:///a/./b/')"),
            "file:///a/b"
        );
        assert_eq!(path("CREATE TABLE t ENGINE = IcebergLocal('/a/b')"), "/a/b");
        for bad in [
            "CREATE TABLE t ENGINE = IcebergLocal('/a/../b')",
            "CREATE TABLE t ENGINE = IcebergLocal('/..')",
            "CREATE TABLE t ENGINE = IcebergLocal('relative/t')",
            "CREATE TABLE t ENGINE = IcebergLocal('/')",
            "CREATE TABLE t ENGINE = IcebergLocal('')",
        ] {
            let e = table_def(&create(bad), "default").expect_err(bad);
            assert_eq!(e.kind(), ErrorKind::BadArguments, "{bad}");
        }
        let e = table_def(
            &create("CREATE TABLE t ENGINE = IcebergLocal('/a/../b')"),
            "default",
        )
        .unwrap_err();
        assert_eq!(
            e.message(),
            "IcebergLocal: the table path '/a/../b' has a '..' component; give the path without it"
        );
    }

    #[test]
    fn nosign_and_arity() {
        let def = table_def(
            &create("CREATE TABLE t ENGINE = IcebergS3('s3://b/t/', NOSIGN)"),
            "x",
        )
        .unwrap();
        assert_eq!(def.args[1], EngineArg::NoSign);
        assert_eq!(def.database, "x");
        for bad in [
            "CREATE TABLE t ENGINE = IcebergS3('s3://b/t/', 'k')",
            "CREATE TABLE t ENGINE = IcebergLocal('/a', '/b')",
            "CREATE TABLE t ENGINE = IcebergAzure('c', 'd')",
            "CREATE TABLE t ENGINE = IcebergLocal(5)",
            "CREATE TABLE t ENGINE = IcebergS3('s3://b/t/', 'k', NOSIGN)",
        ] {
            let e = table_def(&create(bad), "default").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BadArguments, "{bad}");
        }
    }

    #[test]
    fn iceberg_format_version_is_kept_with_a_warning() {
        let statement = create(
            "CREATE TABLE t ENGINE = IcebergLocal('/a') SETTINGS iceberg_use_version_hint = 1, \
             iceberg_format_version = 3",
        );
        let def = table_def(&statement, "default").unwrap();
        assert!(
            show_create(&def)
                .ends_with("\nSETTINGS iceberg_format_version = 3, iceberg_use_version_hint = 1")
        );
        let warnings = create_warnings(&statement);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(
                "Setting iceberg_format_version = 3 has no effect on an existing table"
            ),
            "{warnings:?}"
        );
        let plain = create(
            "CREATE TABLE t ENGINE = IcebergLocal('/a') SETTINGS iceberg_use_version_hint = 1",
        );
        assert!(create_warnings(&plain).is_empty());
    }

    #[test]
    fn table_settings_are_validated() {
        let e = table_def(
            &create("CREATE TABLE t ENGINE = IcebergLocal('/a') SETTINGS nope = 1"),
            "default",
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownSetting);
        let e = table_def(
            &create(
                "CREATE TABLE t ENGINE = IcebergLocal('/a') SETTINGS iceberg_format_version = 7",
            ),
            "default",
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadArguments);
    }
}

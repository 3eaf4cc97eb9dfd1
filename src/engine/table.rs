//! Opening a registered table for maintenance: its engine arguments become a storage client, a
//! location and the metadata-file settings.

use super::ddl::table_settings;
use super::registry::{EngineArg, TableDef};
use super::runtime::Runtime;
use crate::error::{Error, Result};
use crate::iceberg::locate::MetadataSettings;
use crate::io::{FileIO, StorageOptions, StoreResolver};
use crate::maintain::target::MaintenanceTarget;
use crate::settings::Settings;

/// The table `def`, ready for a procedure run with the session's `settings`.
pub fn open_table(
    runtime: &Runtime,
    settings: &Settings,
    def: &TableDef,
) -> Result<MaintenanceTarget> {
    let args = string_args(def)?;
    let override_io = runtime.io_override.as_ref();
    let (location, io) = match def.engine.as_str() {
        "IcebergLocal" => {
            let [path] = args.as_slice() else {
                return Err(Error::bad_arguments(format!(
                    "IcebergLocal expects one argument (the table path), table {}.{} has {}",
                    def.database,
                    def.name,
                    args.len()
                )));
            };
            // Definitions saved before CREATE normalised paths get the same treatment.
            local_storage(path, override_io)?
        }
        "IcebergS3" => {
            let (location, options) = StorageOptions::from_s3_engine_args(&args)?;
            remote_storage(location, options, override_io, runtime.host_stores())
        }
        "IcebergAzure" => {
            let (location, options) = StorageOptions::from_azure_engine_args(&args)?;
            remote_storage(location, options, override_io, runtime.host_stores())
        }
        other => {
            return Err(Error::bad_arguments(format!(
                "Unknown table engine {other}"
            )));
        }
    };
    Ok(MaintenanceTarget {
        source: Default::default(),
        io,
        location,
        metadata_settings: metadata_settings(def)?,
        table_name: format!("{}.{}", def.database, def.name),
        settings: settings.clone(),
        now_ms: runtime.clock.now_ms(),
        progress: Default::default(),
        before_commit: runtime.before_commit.clone(),
    })
}

/// A table on local disk at `path` (absolute, or a `file:` URI), normalised; an injected store
/// (tests, embedders) takes the location as its own URI.
pub(crate) fn local_storage(path: &str, override_io: Option<&FileIO>) -> Result<(String, FileIO)> {
    Ok(match override_io {
        Some(io) => (path.to_string(), io.clone()),
        None => (super::ddl::normalize_local_path(path)?, FileIO::local()),
    })
}

/// A table in an object store (S3, Azure, GCS) at `location`, reached with `options` unless a
/// store is injected; a host's stores (`host_stores`), when it has one for the bucket, first.
pub(crate) fn remote_storage(
    location: String,
    options: StorageOptions,
    override_io: Option<&FileIO>,
    host_stores: Option<&StoreResolver>,
) -> (String, FileIO) {
    let io = override_io.cloned().unwrap_or_else(|| {
        let io = FileIO::new(options);
        match host_stores {
            Some(resolver) => io.with_store_resolver(std::sync::Arc::clone(resolver)),
            None => io,
        }
    });
    (location, io)
}

fn string_args(def: &TableDef) -> Result<Vec<String>> {
    def.args
        .iter()
        .map(|a| match a {
            EngineArg::Str(s) => Ok(s.clone()),
            EngineArg::NoSign if def.engine == "IcebergS3" => Ok("NOSIGN".to_string()),
            EngineArg::NoSign => Err(Error::bad_arguments(format!(
                "NOSIGN is not an argument of {}",
                def.engine
            ))),
        })
        .collect()
}

/// The metadata-file settings, read through the table-settings registry (which validates them).
fn metadata_settings(def: &TableDef) -> Result<MetadataSettings> {
    let settings = table_settings(def)?;
    let text = |name: &str| Some(settings.get_string(name).to_string()).filter(|v| !v.is_empty());
    Ok(MetadataSettings {
        metadata_file_path: text("iceberg_metadata_file_path"),
        table_uuid: text("iceberg_metadata_table_uuid"),
        by_last_updated_ms: settings
            .get_bool("iceberg_recent_metadata_file_by_last_updated_ms_field"),
        use_version_hint: settings.get_bool("iceberg_use_version_hint"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn local(path: &str, settings: &[(&str, &str)]) -> TableDef {
        TableDef {
            database: "default".into(),
            name: "t".into(),
            engine: "IcebergLocal".into(),
            args: vec![EngineArg::Str(path.into())],
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            columns: None,
        }
    }

    #[test]
    fn local_table_with_settings() {
        let def = local(
            "/data/t",
            &[
                ("iceberg_use_version_hint", "1"),
                ("iceberg_metadata_file_path", "v3.metadata.json"),
            ],
        );
        let t = open_table(&Runtime::default(), &Settings::new(), &def).unwrap();
        assert_eq!(t.location, "/data/t");
        assert!(t.metadata_settings.use_version_hint);
        assert_eq!(
            t.metadata_settings.metadata_file_path.as_deref(),
            Some("v3.metadata.json")
        );
        assert_eq!(t.table_name, "default.t");
    }

    #[test]
    fn saved_local_paths_are_normalised_when_opened() {
        let t = open_table(
            &Runtime::default(),
            &Settings::new(),
            &local("/data/./t/", &[]),
        )
        .unwrap();
        assert_eq!(t.location, "/data/t");
        let e = open_table(
            &Runtime::default(),
            &Settings::new(),
            &local("/data/../t", &[]),
        )
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadArguments);
    }

    #[test]
    fn bad_flag_is_named() {
        let def = local("/data/t", &[("iceberg_use_version_hint", "maybe")]);
        let e = open_table(&Runtime::default(), &Settings::new(), &def).unwrap_err();
        assert!(e.message().contains("iceberg_use_version_hint"), "{e}");
    }

    #[test]
    fn s3_table_location() {
        let def = TableDef {
            engine: "IcebergS3".into(),
            args: vec![
                EngineArg::Str("s3://bucket/wh/t/".into()),
                EngineArg::NoSign,
            ],
            ..local("", &[])
        };
        let t = open_table(&Runtime::default(), &Settings::new(), &def).unwrap();
        assert!(t.location.starts_with("s3://bucket/wh/t"), "{}", t.location);
    }
}

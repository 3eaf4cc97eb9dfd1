//! The settings of a `DataLakeCatalog` database (ClickHouse's names): which exist, which hold a
//! secret (masked as `[HIDDEN]` wherever statements are shown), which are booleans, and which are
//! URLs (masked by [`crate::io::mask_url`], and refused with credentials, a query or a fragment
//! in them, as the catalog URL is).

use super::{CatalogType, ENGINE};
use crate::error::{Error, ErrorKind, Result};

/// A database setting of `DataLakeCatalog`: name, whether its value is a secret, whether it is
/// a boolean, whether it is a URL (shown masked by [`crate::io::mask_url`], and refused with
/// credentials, a query or a fragment in it).
#[derive(Debug, Clone, Copy)]
pub struct DatabaseSetting {
    pub name: &'static str,
    pub secret: bool,
    pub boolean: bool,
    pub url: bool,
}

const fn text(name: &'static str) -> DatabaseSetting {
    DatabaseSetting {
        name,
        secret: false,
        boolean: false,
        url: false,
    }
}

const fn secret(name: &'static str) -> DatabaseSetting {
    DatabaseSetting {
        name,
        secret: true,
        boolean: false,
        url: false,
    }
}

const fn flag(name: &'static str) -> DatabaseSetting {
    DatabaseSetting {
        name,
        secret: false,
        boolean: true,
        url: false,
    }
}

const fn url(name: &'static str) -> DatabaseSetting {
    DatabaseSetting {
        name,
        secret: false,
        boolean: false,
        url: true,
    }
}

/// The settings `CREATE DATABASE … ENGINE = DataLakeCatalog(…) SETTINGS …` accepts (ClickHouse's
/// names); any other is `UNKNOWN_SETTING`.
pub const DATABASE_SETTINGS: &[DatabaseSetting] = &[
    text("catalog_type"),
    text("warehouse"),
    secret("catalog_credential"),
    secret("auth_header"),
    text("auth_scope"),
    url("oauth_server_uri"),
    flag("oauth_server_use_request_body"),
    flag("vended_credentials"),
    url("storage_endpoint"),
    // ClickHouse hides the key id too in SHOW CREATE DATABASE.
    secret("aws_access_key_id"),
    secret("aws_secret_access_key"),
    secret("aws_session_token"),
    text("region"),
    text("aws_role_arn"),
    text("aws_role_session_name"),
    text("dlf_access_key_id"),
    secret("dlf_access_key_secret"),
    text("namespaces"),
    flag("force_add_bucket"),
    text("vended_credentials_cache_ttl"),
    // icetrim's own: the local folder a catalog's `file://` tables may live in.
    text("storage_local_root"),
    // icetrim's own: the maintenance policy of the database's tables (`SYSTEM MAINTAIN`), above
    // the session's settings and below each table's `icetrim.maintain.*` properties.
    flag("iceberg_maintain_enabled"),
    text("iceberg_maintain_compact_min_input_files"),
    text("iceberg_maintain_manifests_min_count"),
    flag("iceberg_maintain_expire_clean_expired_metadata"),
    flag("iceberg_maintain_orphans_enabled"),
    text("iceberg_maintain_orphans_older_than_ms"),
    flag("iceberg_maintain_force"),
    text("iceberg_maintain_lease_seconds"),
];

/// The setting `name`, if `DataLakeCatalog` has it.
pub fn database_setting(name: &str) -> Option<&'static DatabaseSetting> {
    DATABASE_SETTINGS.iter().find(|s| s.name == name)
}

/// The value of setting `name` as statements show it (`SHOW CREATE DATABASE`, the shell's
/// history): `[HIDDEN]` for a secret, a URL masked by [`crate::io::mask_url`], else as given.
pub fn shown_setting(name: &str, value: &str) -> String {
    match database_setting(name) {
        Some(s) if s.secret => crate::io::HIDDEN.to_string(),
        Some(s) if s.url => crate::io::mask_url(value),
        _ => value.to_string(),
    }
}

/// Refuses a catalog URL (the engine's first argument, `oauth_server_uri`, `storage_endpoint`)
/// with credentials, a query string or a fragment in it, shown masked: the catalog URL is the
/// root request paths are appended to (a query would land inside each path), and a secret there
/// would be kept and shown in clear.
pub(super) fn check_catalog_url(what: &str, url: &str) -> Result<()> {
    crate::io::refuse_url_credentials(what, url)?;
    crate::io::refuse_url_query(
        what,
        url,
        "give credentials as catalog_credential, auth_header or the engine's user and password",
    )
}

/// Validate `name = value` and return the value as stored (`1`/`0` for booleans).
pub fn normalize_setting(name: &str, value: &str) -> Result<String> {
    let setting = database_setting(name).ok_or_else(|| {
        let hints = crate::hints::closest(
            name,
            DATABASE_SETTINGS.iter().map(|s| s.name),
            crate::hints::MAX_HINTS,
        );
        Error::new(
            ErrorKind::UnknownSetting,
            format!(
                "Unknown setting '{name}': for database engine {ENGINE}{}",
                crate::hints::maybe_you_meant(&hints)
            ),
        )
    })?;
    if setting.boolean {
        return match value.trim().to_ascii_lowercase().as_str() {
            "1" | "true" => Ok("1".into()),
            "0" | "false" => Ok("0".into()),
            _ => Err(Error::bad_arguments(format!(
                "Cannot parse bool from string '{value}' (setting {name})"
            ))),
        };
    }
    if name == "catalog_type" {
        CatalogType::parse(value)?;
    }
    if name == super::local_root::SETTING {
        return super::local_root::normalize_root(value);
    }
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_clickhouses() {
        assert_eq!(
            normalize_setting("nope", "1").unwrap_err().message(),
            "Unknown setting 'nope': for database engine DataLakeCatalog"
        );
        assert_eq!(
            normalize_setting("catalog_typ", "rest")
                .unwrap_err()
                .message(),
            "Unknown setting 'catalog_typ': for database engine DataLakeCatalog. Maybe you meant: \
             ['catalog_type']"
        );
        assert_eq!(
            normalize_setting("vended_credentials", "true").unwrap(),
            "1"
        );
        assert!(normalize_setting("vended_credentials", "maybe").is_err());
        let e = normalize_setting("catalog_type", "bogus").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadArguments);
        assert!(e.message().contains("'rest'"), "{e}");
    }
}

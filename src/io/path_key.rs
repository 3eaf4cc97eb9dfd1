//! Path identity: when do two URIs name the same object?
//!
//! Rule (paths compare by identity: the same file spelled two ways must never look unreferenced
//! under one of them): the key of a URI is `<family>://<authority>/<path>` where
//! - the scheme family folds aliases: `s3a`/`s3n` → `s3`; `abfss`/`abfs`/`wasbs`/`wasb` → `abfs`
//!   (authority `container@account`, the `.dfs.`/`.blob.` host suffix dropped); `gcs` → `gs`;
//!   `azure` → `az`; bare absolute paths, `file:/x`, `file:///x` and `file://localhost/x` → `file`;
//! - the path is percent-decoded, duplicate slashes are folded, leading/trailing slashes dropped;
//!   a literal `%` is written back as `%25`, so the key is a fixed point (`key(key(x)) == key(x)`);
//! - `.` and `..` segments are kept literally (object stores do not resolve them).
//!
//! Decoding may equate a key literally named `a%20b` with `a b`: for maintenance this errs on
//! the safe side (a file looks referenced, so it is kept).
//!
//! [`is_under`] answers "is this file inside the table location" by identity and refuses any
//! `..` segment, so no spelling of a path can escape the location.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

/// The identity key of `uri`: equal keys ⇔ same object. Never fails: text that is not a URI
/// is keyed as written (with slashes folded), so it can only equal itself.
pub fn path_key(uri: &str) -> String {
    let mut key = String::new();
    path_key_into(uri, &mut key);
    key
}

/// [`path_key`] written into `key` (cleared first), so a caller keying every manifest entry reuses
/// one buffer instead of allocating per entry.
pub fn path_key_into(uri: &str, key: &mut String) {
    let (family, authority, path) = split(uri);
    key.clear();
    key.reserve(family.len() + authority.len() + path.len() + 4);
    key.push_str(&family);
    key.push_str("://");
    key.push_str(&authority);
    key.push('/');
    push_canonical_path(key, path);
}

/// Whether `uri` names an object strictly inside the directory `location` (by identity).
/// False for the location itself, for siblings sharing a name prefix (`/t2` is not under `/t`),
/// and for any URI with a `..` segment.
pub fn is_under(location: &str, uri: &str) -> bool {
    let (loc_family, loc_authority, loc_path) = split(location);
    let (family, authority, path) = split(uri);
    if loc_family != family || loc_authority != authority {
        return false;
    }
    let loc_path = canonical_path(loc_path);
    let path = canonical_path(path);
    if path.split('/').any(|segment| segment == "..") {
        return false;
    }
    if loc_path.is_empty() {
        return !path.is_empty();
    }
    path.strip_prefix(&loc_path)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| !rest.is_empty())
}

/// (family, authority, raw path) of a URI; borrowed when nothing needs folding.
fn split(uri: &str) -> (Cow<'static, str>, Cow<'_, str>, &str) {
    if uri.starts_with('/') {
        return (Cow::Borrowed("file"), Cow::Borrowed(""), uri);
    }
    let Some((scheme, rest)) = uri.split_once(':') else {
        return (Cow::Borrowed(""), Cow::Borrowed(""), uri);
    };
    let Some(after) = rest.strip_prefix("//") else {
        // `file:/x`, `memory:x`: no authority.
        return (family_of(scheme), Cow::Borrowed(""), rest);
    };
    let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
    let family = family_of(scheme);
    let authority = match &*family {
        "file" if authority.eq_ignore_ascii_case("localhost") => Cow::Borrowed(""),
        // memory:// has no authority: everything after the slashes is path.
        "memory" => return (family, Cow::Borrowed(""), after),
        "abfs" => Cow::Owned(azure_authority(authority)),
        _ => Cow::Borrowed(authority),
    };
    (family, authority, path)
}

/// The family of a scheme (case-insensitive).
fn family_of(scheme: &str) -> Cow<'static, str> {
    let lower;
    let scheme = if scheme.bytes().any(|b| b.is_ascii_uppercase()) {
        lower = scheme.to_ascii_lowercase();
        lower.as_str()
    } else {
        scheme
    };
    Cow::Borrowed(match scheme {
        "s3" | "s3a" | "s3n" => "s3",
        "abfs" | "abfss" | "wasb" | "wasbs" => "abfs",
        "az" | "azure" => "az",
        "gs" | "gcs" => "gs",
        "file" => "file",
        "memory" => "memory",
        other => return Cow::Owned(other.to_string()),
    })
}

/// `container@account.dfs.core.windows.net` and `container@account.blob.core.windows.net`
/// → `container@account`.
fn azure_authority(authority: &str) -> String {
    match authority.split_once('@') {
        Some((container, host)) => {
            let host = host.split(':').next().unwrap_or(host);
            let account = match host.split_once('.') {
                Some((account, suffix))
                    if suffix.starts_with("dfs.") || suffix.starts_with("blob.") =>
                {
                    account
                }
                _ => host,
            };
            format!("{container}@{}", account.to_ascii_lowercase())
        }
        None => authority.to_string(),
    }
}

/// Decoded, slash-folded, with literal `%` re-encoded so the result decodes to itself.
fn canonical_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    push_canonical_path(&mut out, path);
    out
}

/// Append the non-empty `/`-separated segments of `path`, joined by single slashes.
fn push_segments(out: &mut String, path: &str) {
    let mut first = true;
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        if !first {
            out.push('/');
        }
        first = false;
        out.push_str(segment);
    }
}

/// Append [`canonical_path`] of `path` to `out`.
fn push_canonical_path(out: &mut String, path: &str) {
    if !path.contains('%') {
        // Nothing to decode or re-encode (the common case): fold slashes only.
        push_segments(out, path);
        return;
    }
    let decoded = percent_decode_str(path).decode_utf8_lossy();
    let mut first = true;
    for segment in decoded.split('/').filter(|s| !s.is_empty()) {
        if !first {
            out.push('/');
        }
        first = false;
        if segment.contains('%') {
            out.push_str(&segment.replace('%', "%25"));
        } else {
            out.push_str(segment);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same(a: &str, b: &str) {
        assert_eq!(path_key(a), path_key(b), "{a} vs {b}");
    }

    fn differ(a: &str, b: &str) {
        assert_ne!(path_key(a), path_key(b), "{a} vs {b}");
    }

    #[test]
    fn s3_aliases() {
        same("s3://b/t/x.avro", "s3a://b/t/x.avro");
        same("s3://b/t/x.avro", "s3n://b/t/x.avro");
        same("S3A://b/t/x.avro", "s3://b/t/x.avro");
        differ("s3://b/t/x.avro", "s3://c/t/x.avro");
        differ("s3://b/t/x.avro", "gs://b/t/x.avro");
        assert_eq!(path_key("s3a://b//t/x/"), "s3://b/t/x");
    }

    #[test]
    fn local_forms() {
        same("/w/t/x", "file:///w/t/x");
        same("/w/t/x", "file:/w/t/x");
        same("/w/t/x", "file://localhost/w/t/x");
        same("/w/t/x", "//w//t/x/");
        assert_eq!(path_key("/w/t/x"), "file:///w/t/x");
        differ("/w/t/x", "/w/t/X");
        differ("file://other/w/t/x", "/w/t/x");
    }

    #[test]
    fn percent_encoding() {
        same("s3://b/t/a%20b", "s3://b/t/a b");
        same("/t/%C3%BC", "/t/ü");
        same("s3://b/t/100%25", "s3://b/t/100%");
        differ("s3://b/t/a%2520b", "s3://b/t/a b");
        assert_eq!(path_key("s3://b/t/100%"), "s3://b/t/100%25");
    }

    #[test]
    fn azure_authorities() {
        same(
            "abfss://c@acct.dfs.core.windows.net/t/x",
            "wasbs://c@acct.blob.core.windows.net/t/x",
        );
        same(
            "abfs://c@acct.dfs.core.windows.net/t/x",
            "wasb://c@ACCT.blob.core.windows.net//t/x",
        );
        differ(
            "abfss://c@acct.dfs.core.windows.net/t/x",
            "abfss://d@acct.dfs.core.windows.net/t/x",
        );
        same("az://c/t/x", "azure://c/t/x");
    }

    #[test]
    fn memory_forms() {
        same("memory:///w/t/x", "memory://w/t/x");
        same("memory:w/t/x", "memory://w/t/x");
    }

    #[test]
    fn dots_are_literal() {
        differ("s3://b/t/../x", "s3://b/x");
        differ("s3://b/t/./x", "s3://b/t/x");
    }

    #[test]
    fn under_location() {
        assert!(is_under("s3://b/t", "s3a://b/t/data/x.parquet"));
        assert!(is_under("s3://b/t/", "s3://b//t//x"));
        assert!(is_under("/w/t/", "file:///w/t/metadata/v1.metadata.json"));
        assert!(is_under("s3://b", "s3://b/x"));
        assert!(!is_under("s3://b/t", "s3://b/t"));
        assert!(!is_under("s3://b/t", "s3://b/t/"));
        assert!(!is_under("s3://b/t", "s3://b/t2/x"));
        assert!(!is_under("s3://b/t", "s3://c/t/x"));
        assert!(!is_under("s3://b/t", "gs://b/t/x"));
        assert!(!is_under("s3://b/t", "s3://b/t/../u/x"));
        assert!(!is_under("s3://b/t", "s3://b/t/%2E%2E/u/x"));
        assert!(!is_under("s3://b/t", "s3://b/t/a/../../u"));
        assert!(!is_under("/w/t", "/w/x"));
        assert!(!is_under("/w/t", "relative/w/t/x"));
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9_.=-]{1,8}",
            Just("a b".to_string()),
            Just("ü".to_string()),
            Just("%".to_string()),
            Just("%20".to_string()),
            Just("..".to_string()),
        ]
    }

    fn uri() -> impl Strategy<Value = String> {
        let scheme = prop_oneof![
            Just("s3://b/"),
            Just("s3a://b/"),
            Just("/"),
            Just("file:///"),
            Just("file:/"),
            Just("gs://g/"),
            Just("memory://"),
            Just("abfss://c@a.dfs.core.windows.net/"),
            Just("wasbs://c@a.blob.core.windows.net/"),
        ];
        let seps = prop_oneof![Just("/"), Just("//")];
        (
            scheme,
            proptest::collection::vec((segment(), seps), 0..5),
            any::<bool>(),
        )
            .prop_map(|(scheme, parts, trailing)| {
                let mut uri = scheme.to_string();
                for (segment, sep) in parts {
                    uri.push_str(&segment);
                    uri.push_str(sep);
                }
                if !trailing {
                    while uri.ends_with('/') && uri.len() > scheme.len() {
                        uri.pop();
                    }
                }
                uri
            })
    }

    /// Respell a URI: scheme alias, extra slashes, percent-encode a space.
    fn respell(uri: &str) -> String {
        let respelled = if let Some(rest) = uri.strip_prefix("s3://") {
            format!("s3n://{rest}")
        } else if let Some(rest) = uri.strip_prefix("file:///") {
            format!("/{rest}")
        } else if let Some(rest) = uri.strip_prefix("abfss://c@a.dfs.core.windows.net/") {
            format!("wasb://c@a.blob.core.windows.net//{rest}")
        } else {
            uri.to_string()
        };
        format!("{}/", respelled.replace(' ', "%20"))
    }

    proptest! {
        #[test]
        fn key_is_a_fixed_point(uri in uri()) {
            let key = path_key(&uri);
            prop_assert_eq!(path_key(&key), key);
        }

        #[test]
        fn aliases_agree(uri in uri()) {
            prop_assert_eq!(path_key(&respell(&uri)), path_key(&uri));
        }

        #[test]
        fn children_are_under(uri in uri(), child in "[a-z]{1,6}") {
            let inside = format!("{}/{child}", uri.trim_end_matches('/'));
            let has_dots = uri.split('/').any(|s| s == "..");
            prop_assert_eq!(is_under(&uri, &inside), !has_dots);
            prop_assert!(!is_under(&inside, &uri));
        }
    }
}

//! Secrets out of everything icetrim prints. [`mask_url`] is the one rule for a URL (a catalog
//! URL, `oauth_server_uri`, `storage_endpoint`, a table URL, a URL inside an error a storage or
//! HTTP client gave): its `user[:password]@` and its whole query and fragment become `[HIDDEN]`,
//! whatever they hold (an S3 presigned `X-Amz-*` query, an Azure SAS `sv=…&sig=…`, a `token=`).
//! [`mask_target`] applies it to an engine's first argument (a URL, or an Azure connection
//! string, whose `AccountKey` and `SharedAccessSignature` are hidden too); [`mask_urls_in`] to
//! every URL inside free text. `SHOW CREATE TABLE`/`DATABASE`, the shell's history and error
//! messages all go through these.
//!
//! Where a URL must not carry a secret at all, it is refused before anything is stored, without
//! repeating the secret: credentials in a URL ([`refuse_url_credentials`], every engine and
//! catalog URL), and a query or fragment where icetrim would not use it ([`refuse_url_query`]:
//! catalog URLs, whose query would be glued into request paths; S3 table URLs).

use crate::error::{Error, Result};

/// The text ClickHouse prints in place of a secret.
pub const HIDDEN: &str = "[HIDDEN]";

/// `url` as icetrim prints it: `scheme://[HIDDEN]@host/path?[HIDDEN]#[HIDDEN]`. The userinfo of
/// `http(s)`, `s3` (`s3a`, `s3n`), `gs` and `file` URLs (Azure's `abfss://container@account…`
/// names a container, not a user), and the query and fragment of any `scheme://` URL, are
/// hidden whole. Text without `://` (a local path, a connection string) is returned as it is.
pub fn mask_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let url = match userinfo_range(url) {
        Some(range) => format!("{}{HIDDEN}@{}", &url[..range.start], &url[range.end..]),
        None => url.to_string(),
    };
    let after_scheme = scheme_end + 3;
    let Some(cut) = url[after_scheme..]
        .find(['?', '#'])
        .map(|i| i + after_scheme)
    else {
        return url;
    };
    let (base, rest) = url.split_at(cut);
    let mut out = base.to_string();
    let query = rest.starts_with('?');
    if query {
        out.push('?');
        out.push_str(HIDDEN);
    }
    if rest.contains('#') {
        out.push('#');
        out.push_str(HIDDEN);
    }
    out
}

/// `text` with every `scheme://…` URL in it masked by [`mask_url`]. A URL ends at white space, a
/// quote or an angle bracket. For messages of storage and HTTP clients, which may quote the URL
/// of a request (and a SAS token or a presigned query with it).
pub fn mask_urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let len = rest[at..]
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '<' | '>'))
            .unwrap_or(rest.len() - at);
        let end = at + len;
        out.push_str(&rest[..start]);
        out.push_str(&mask_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// An engine's first argument (a URL or an Azure connection string) with every secret masked:
/// the one function `SHOW CREATE TABLE`, the shell's history and error messages use for it.
pub fn mask_target(text: &str) -> String {
    if looks_like_connection_string(text) {
        mask_connection_string(text)
    } else {
        mask_url(text)
    }
}

/// Whether an `IcebergAzure` first argument is a connection string (`Key=Value;…`) rather than
/// a storage account URL.
pub(super) fn looks_like_connection_string(target: &str) -> bool {
    target.contains('=') && !target.starts_with("http://") && !target.starts_with("https://")
}

/// A connection string with the values of `AccountKey` and `SharedAccessSignature` replaced by
/// [`HIDDEN`], as ClickHouse prints them, and every URL in a part (`BlobEndpoint=…`) masked.
fn mask_connection_string(target: &str) -> String {
    target
        .split(';')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_secret_key(key.trim()) => format!("{key}={HIDDEN}"),
            _ => mask_urls_in(pair),
        })
        .collect::<Vec<_>>()
        .join(";")
}

fn is_secret_key(key: &str) -> bool {
    key.eq_ignore_ascii_case("AccountKey") || key.eq_ignore_ascii_case("SharedAccessSignature")
}

/// The `user[:password]@` of a `http(s)://`, `s3://` (`s3a`, `s3n`), `gs://` or `file://` URL.
/// (Azure's `abfss://container@account...` names a container, not a user.)
fn userinfo_range(url: &str) -> Option<std::ops::Range<usize>> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if !["http", "https", "s3", "s3a", "s3n", "gs", "gcs", "file"].contains(&scheme.as_str()) {
        return None;
    }
    let start = scheme.len() + 3;
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_len].rfind('@')?;
    Some(start..start + at + 1)
}

/// Refuses a URL that carries credentials (`scheme://user:password@host/...`), without repeating
/// them: icetrim never uses them, and the definition would keep them in clear. `what` names the
/// engine or setting.
pub fn refuse_url_credentials(what: &str, url: &str) -> Result<()> {
    if userinfo_range(url).is_none() {
        return Ok(());
    }
    Err(Error::bad_arguments(format!(
        "{what}: the url '{}' must not carry credentials (user:password@); give them as engine \
         arguments or settings instead",
        mask_url(url)
    )))
}

/// Refuses a URL with a query string or a fragment (`?…`, `#…`), shown masked: where icetrim would
/// not send it (a catalog URL is the root that request paths are appended to; an S3 table URL
/// names a folder, not a presigned object), a query can only be a secret in the wrong place.
/// `what` names the engine or setting, `instead` says where credentials go.
pub fn refuse_url_query(what: &str, url: &str, instead: &str) -> Result<()> {
    if !url.contains("://") || !url.contains(['?', '#']) {
        return Ok(());
    }
    Err(Error::bad_arguments(format!(
        "{what}: the url '{}' must not carry a query string or fragment (it may hold a secret, \
         and icetrim would not send it); {instead}",
        mask_url(url)
    )))
}

/// The checks `CREATE TABLE` makes on an engine's URL arguments (before any I/O): no credentials
/// inside a URL (the S3 url, the Azure storage account url or a connection string's
/// `BlobEndpoint`, a local `file://` URL); no query or fragment in an S3 url (an Azure storage
/// account url may carry a SAS token as its query, as ClickHouse takes it; not a fragment).
pub fn check_engine_urls(engine: &str, args: &[&str]) -> Result<()> {
    match (engine, args.first()) {
        ("IcebergAzure", Some(target)) if looks_like_connection_string(target) => target
            .split(';')
            .filter_map(|pair| pair.split_once('='))
            .filter(|(key, _)| key.trim().eq_ignore_ascii_case("BlobEndpoint"))
            .try_for_each(|(_, url)| refuse_url_credentials(engine, url.trim())),
        ("IcebergAzure", Some(url)) => {
            refuse_url_credentials(engine, url)?;
            if url.contains('#') {
                return refuse_url_query(engine, url, "give a SAS token as the url's query");
            }
            Ok(())
        }
        ("IcebergS3", Some(url)) => {
            refuse_url_credentials(engine, url)?;
            refuse_url_query(
                engine,
                url,
                "give credentials as engine arguments (access_key_id, secret_access_key)",
            )
        }
        (_, Some(url)) => refuse_url_credentials(engine, url),
        (_, None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_query_and_fragment_are_hidden_whole() {
        for (url, shown) in [
            ("http://k:s@h:9/b/t?x=1", "http://[HIDDEN]@h:9/b/t?[HIDDEN]"),
            (
                "https://a.blob.core.windows.net/?sv=2022&sig=S3CR3T",
                "https://a.blob.core.windows.net/?[HIDDEN]",
            ),
            (
                "https://b.s3.amazonaws.com/k?X-Amz-Credential=AK&X-Amz-Signature=S3CR3T",
                "https://b.s3.amazonaws.com/k?[HIDDEN]",
            ),
            (
                "http://h/v1?token=S3CR3T#frag",
                "http://h/v1?[HIDDEN]#[HIDDEN]",
            ),
            ("http://h/v1#access_token=S3CR3T", "http://h/v1#[HIDDEN]"),
            ("http://h:8181/v1", "http://h:8181/v1"),
            ("s3://u:p@b/t", "s3://[HIDDEN]@b/t"),
            (
                "abfss://c@a.dfs.core.windows.net/t",
                "abfss://c@a.dfs.core.windows.net/t",
            ),
            ("/local/a?b", "/local/a?b"),
            ("", ""),
        ] {
            assert_eq!(mask_url(url), shown, "{url}");
        }
    }

    #[test]
    fn urls_inside_text_are_masked() {
        let text = "Error performing GET http://127.0.0.1:1/acct/c/x?sv=1&sig=S3CR3T in 3ms, \
                    see 'https://u:PW@h/p?token=T0K' and s3://b/k";
        assert_eq!(
            mask_urls_in(text),
            "Error performing GET http://127.0.0.1:1/acct/c/x?[HIDDEN] in 3ms, see \
             'https://[HIDDEN]@h/p?[HIDDEN]' and s3://b/k"
        );
        assert_eq!(mask_urls_in("no url: a?b"), "no url: a?b");
        assert_eq!(mask_urls_in("ends with ://"), "ends with ://");
    }

    #[test]
    fn connection_strings_hide_keys_and_mask_their_urls() {
        assert_eq!(
            mask_target("BlobEndpoint=http://u:p@h/a?sv=1;AccountKey=k;SharedAccessSignature=s"),
            "BlobEndpoint=http://[HIDDEN]@h/a?[HIDDEN];AccountKey=[HIDDEN];\
             SharedAccessSignature=[HIDDEN]"
        );
        assert_eq!(
            mask_target("https://acct.blob.core.windows.net?sv=1&sig=S"),
            "https://acct.blob.core.windows.net?[HIDDEN]"
        );
        // Not http(s) and with a `=`: taken for a connection string, its URL masked still.
        assert_eq!(
            mask_target("ftp://a.blob.core.windows.net/?sv=1&sig=S3CR3T"),
            "ftp://a.blob.core.windows.net/?[HIDDEN]"
        );
    }

    #[test]
    fn refusals_never_repeat_the_secret() {
        let e = refuse_url_credentials("IcebergS3", "http://AK:S3CR3T@h/b/t").unwrap_err();
        assert!(!e.message().contains("S3CR3T"), "{e}");
        assert!(e.message().contains("http://[HIDDEN]@h/b/t"), "{e}");
        let e = refuse_url_query("DataLakeCatalog", "http://h/v1?token=S3CR3T", "x").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadArguments);
        assert!(e.message().contains("'http://h/v1?[HIDDEN]'"), "{e}");
        assert!(!e.message().contains("S3CR3T"), "{e}");
        assert!(refuse_url_query("x", "http://h/v1", "x").is_ok());
        assert!(refuse_url_query("x", "/local/a?b", "x").is_ok());
    }

    #[test]
    fn engine_urls() {
        let s3 = |url| check_engine_urls("IcebergS3", &[url]);
        assert!(s3("s3://b/t").is_ok());
        assert!(s3("http://127.0.0.1:9000/b/t").is_ok());
        for bad in [
            "https://b.s3.amazonaws.com/t?X-Amz-Signature=S3CR3T",
            "s3://b/t?S3CR3T",
            "s3://b/t#S3CR3T",
            "http://k:S3CR3T@h/b/t",
        ] {
            let e = s3(bad).unwrap_err();
            assert!(!e.message().contains("S3CR3T"), "{e}");
        }
        let azure = |url| check_engine_urls("IcebergAzure", &[url, "c", "t"]);
        assert!(azure("https://a.blob.core.windows.net/?sv=1&sig=S").is_ok());
        assert!(azure("https://a.blob.core.windows.net/#S3CR3T").is_err());
        assert!(azure("https://u:S3CR3T@a.blob.core.windows.net/").is_err());
        assert!(azure("AccountName=a;BlobEndpoint=http://u:S3CR3T@h/a").is_err());
        assert!(check_engine_urls("IcebergLocal", &["/data/t?x"]).is_ok());
    }
}

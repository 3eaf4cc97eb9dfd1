//! Statement text without its secrets, as the shell's history keeps it and as `--echo` and a
//! failing statement's location line print it: the engine arguments `SHOW CREATE TABLE` masks, and
//! the secret or URL settings of `CREATE DATABASE`, become `'[HIDDEN]'` (or lose their secret
//! part). Works on the text, so a statement that does not parse is masked too.

use crate::engine::registry::{is_masked_setting, mask_engine_arg};
use crate::sql::Literal;

/// `input` as the history keeps it: every string argument of an `IcebergS3(...)`,
/// `IcebergAzure(...)` or `IcebergLocal(...)` engine clause masked by [`mask_engine_arg`] (the
/// rule of `SHOW CREATE TABLE`), everything else as typed. Works on the text, so a statement that
/// does not parse (a typo, an argument count the engine refuses) is masked too.
pub fn history_text(input: &str) -> String {
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' | b'`' => i = skip_quoted(bytes, i),
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = input[i..].find('\n').map_or(bytes.len(), |n| i + n);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = input[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 2);
            }
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let end = i + bytes[i..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                    .count();
                let word = &input[i..end];
                let is_engine = [
                    "IcebergS3",
                    "IcebergAzure",
                    "IcebergLocal",
                    "DataLakeCatalog",
                ]
                .iter()
                .any(|name| word.eq_ignore_ascii_case(name));
                i = end;
                if is_engine {
                    i = mask_engine_clause(input, word, i, &mut out, &mut copied);
                } else if is_masked_setting(&word.to_ascii_lowercase()) {
                    let name = word.to_ascii_lowercase();
                    i = mask_setting_value(input, &name, i, &mut out, &mut copied);
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&input[copied..]);
    out
}

/// Masks the `= '...'` value after the name of the setting `name` (a secret or a URL) ending at
/// `at`, as `SHOW CREATE DATABASE` shows it; returns where scanning goes on.
fn mask_setting_value(
    input: &str,
    name: &str,
    at: usize,
    out: &mut String,
    copied: &mut usize,
) -> usize {
    let bytes = input.as_bytes();
    let blanks = |from: usize| {
        from + bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count()
    };
    let i = blanks(at);
    if bytes.get(i) != Some(&b'=') {
        return at;
    }
    let start = blanks(i + 1);
    if bytes.get(start) != Some(&b'\'') {
        return at;
    }
    let end = skip_quoted(bytes, start);
    let value = unquote(&input[start..end]);
    let shown = crate::catalog::shown_setting(name, &value);
    if shown != value {
        out.push_str(&input[*copied..start]);
        out.push_str(&Literal::String(shown).to_string());
        *copied = end;
    }
    end
}

/// The end of the quoted text starting at `start` (its closing quote included; a doubled quote
/// or a backslash escape stays inside).
fn skip_quoted(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote && bytes.get(i + 1) == Some(&quote) => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The value of a `'...'` literal spanning `text` (quotes included).
fn unquote(text: &str) -> String {
    let inner = match text.strip_prefix('\'') {
        Some(rest) if rest.ends_with('\'') && !rest.is_empty() => &rest[..rest.len() - 1],
        Some(rest) => rest,
        None => text,
    };
    let mut value = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => value.extend(chars.next()),
            '\'' => {
                chars.next();
                value.push('\'');
            }
            other => value.push(other),
        }
    }
    value
}

/// Masks the string arguments of the engine clause whose name ends at `at` (`(` next, after
/// blanks); writes into `out` up to each masked literal. Returns where scanning goes on.
fn mask_engine_clause(
    input: &str,
    engine: &str,
    at: usize,
    out: &mut String,
    copied: &mut usize,
) -> usize {
    let bytes = input.as_bytes();
    let blanks = |from: usize| {
        from + bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count()
    };
    let mut i = blanks(at);
    if bytes.get(i) != Some(&b'(') {
        return at;
    }
    i += 1;
    let mut index = 0;
    loop {
        i = blanks(i);
        match bytes.get(i) {
            Some(b'\'') => {
                let end = skip_quoted(bytes, i);
                let written = &input[i..end];
                let value = unquote(written);
                let masked = mask_engine_arg(engine, index, &value);
                if masked != value {
                    out.push_str(&input[*copied..i]);
                    out.push_str(&Literal::String(masked).to_string());
                    *copied = end;
                }
                i = end;
            }
            Some(b) if b.is_ascii_alphanumeric() || *b == b'_' => {
                i += bytes[i..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                    .count();
            }
            _ => return i,
        }
        i = blanks(i);
        match bytes.get(i) {
            Some(b',') => {
                index += 1;
                i += 1;
            }
            _ => return i,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_masks_catalog_database_secrets() {
        let typed = "CREATE DATABASE lake ENGINE = DataLakeCatalog('http://h/v1', 'u', 'PW') \
                     SETTINGS catalog_type = 'rest', catalog_credential = 'id:S3CR3T', \
                     auth_header = 'Authorization: Bearer T0K3N', aws_secret_access_key='AWS-S3CR3T'";
        let kept = history_text(typed);
        for secret in ["'PW'", "S3CR3T", "T0K3N"] {
            assert!(!kept.contains(secret), "{kept}");
        }
        assert!(kept.contains("catalog_type = 'rest'"), "{kept}");
        assert!(
            kept.contains("DataLakeCatalog('http://h/v1', 'u', '[HIDDEN]')"),
            "{kept}"
        );
    }

    /// A URL's query (a token, a SAS, a presigned signature) and userinfo never reach the
    /// history, in a catalog URL, its URL settings or a table URL, even in a statement that is
    /// refused.
    #[test]
    fn history_masks_url_secrets() {
        let typed = "CREATE DATABASE lake ENGINE = DataLakeCatalog('http://h/v1?token=S3CR3T') \
                     SETTINGS catalog_type = 'rest', oauth_server_uri = 'http://h/t?k=S3CR3T', \
                     storage_endpoint = 'http://u:S3CR3T@m:9/b', warehouse = 'w'; \
                     CREATE TABLE a ENGINE = IcebergAzure('http://h/acct?sv=1&sig=S3CR3T', 'c', 't'); \
                     CREATE TABLE s ENGINE = IcebergS3('https://b.s3.amazonaws.com/t?X-Amz-Signature=S3CR3T')";
        let kept = history_text(typed);
        assert!(!kept.contains("S3CR3T"), "{kept}");
        for shown in [
            "DataLakeCatalog('http://h/v1?[HIDDEN]')",
            "oauth_server_uri = 'http://h/t?[HIDDEN]'",
            "storage_endpoint = 'http://[HIDDEN]@m:9/b'",
            "warehouse = 'w'",
            "IcebergAzure('http://h/acct?[HIDDEN]', 'c', 't')",
            "IcebergS3('https://b.s3.amazonaws.com/t?[HIDDEN]')",
        ] {
            assert!(kept.contains(shown), "{shown}: {kept}");
        }
    }

    #[test]
    fn history_masks_secrets_as_show_create_does() {
        let cases = [
            (
                "CREATE TABLE s ENGINE = IcebergS3('s3://b/t/', 'AKIA', 'S3CR3T', 'T0K3N');",
                "CREATE TABLE s ENGINE = IcebergS3('s3://b/t/', 'AKIA', '[HIDDEN]', '[HIDDEN]');",
            ),
            (
                "create table s engine = IcebergS3 (\n 'http://AK:S3CR3T@h:9/b/t/' , NOSIGN);",
                "create table s engine = IcebergS3 (\n 'http://[HIDDEN]@h:9/b/t/' , NOSIGN);",
            ),
            (
                "CREATE TABLE a ENGINE = IcebergAzure('AccountName=a;AccountKey=S3CR3T==;', 'c', \
                 't', 'a', 'S3CR3T2')",
                "CREATE TABLE a ENGINE = IcebergAzure('AccountName=a;AccountKey=[HIDDEN];', 'c', \
                 't', 'a', '[HIDDEN]')",
            ),
            // A doubled quote and a backslash escape inside a secret.
            (
                "CREATE TABLE s ENGINE = IcebergS3('s3://b/t/', 'k', 'S3''CR\\'3T')",
                "CREATE TABLE s ENGINE = IcebergS3('s3://b/t/', 'k', '[HIDDEN]')",
            ),
            // A statement the parser refuses (too many arguments) is masked too.
            (
                "CREATE TABLE s ENGINE = IcebergS3('s3://b/t/', 'k', 'S3CR3T', 't', 'x', 'y');",
                "CREATE TABLE s ENGINE = IcebergS3('s3://b/t/', 'k', '[HIDDEN]', '[HIDDEN]', \
                 '[HIDDEN]', '[HIDDEN]');",
            ),
        ];
        for (typed, kept) in cases {
            assert_eq!(history_text(typed), kept, "{typed}");
        }
        // Nothing secret: kept byte for byte, even an engine name inside a string or comment.
        for plain in [
            "SHOW TABLES;",
            "SELECT 'IcebergS3(''a'', ''b'', ''c'')'",
            "-- IcebergS3('a', 'b', 'c')\nSHOW TABLES",
            "CREATE TABLE l ENGINE = IcebergLocal('/w/t'); SET a = 'IcebergS3'",
            "CREATE TABLE s ENGINE = IcebergS3('s3://b/t/', NOSIGN)",
        ] {
            assert_eq!(history_text(plain), plain);
        }
        // Cut-off and odd input never panics and never drops text.
        for odd in [
            "IcebergS3",
            "IcebergS3(",
            "IcebergS3('s3://b/t/', 'k', 'unterminated",
            "IcebergS3('s3://b/t/', 'k', '",
            "IcebergS3('é', 'ü', 'ß')",
            "IcebergS3('a' 'b')",
            "x IcebergAzure ( 'a' , , 'b')",
            "'unterminated IcebergS3('a', 'b', 'c')",
            "/* IcebergS3('a', 'b', 'c')",
        ] {
            let kept = history_text(odd);
            assert!(!kept.is_empty(), "{odd}");
        }
        assert_eq!(
            history_text("IcebergS3('é', 'ü', 'ß')"),
            "IcebergS3('é', 'ü', '[HIDDEN]')"
        );
    }
}

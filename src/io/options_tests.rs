//! Tests of `options`: engine arguments to storage options, and their secrets.

use super::*;

fn args(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn s3(items: &[&str]) -> (String, S3Options) {
    match StorageOptions::from_s3_engine_args(&args(items)) {
        Ok((location, options)) => (location, options.s3),
        Err(e) => panic!("{items:?}: {e}"),
    }
}

fn azure(items: &[&str]) -> (String, AzureOptions) {
    match StorageOptions::from_azure_engine_args(&args(items)) {
        Ok((location, options)) => (location, options.azure),
        Err(e) => panic!("{items:?}: {e}"),
    }
}

#[test]
fn s3_urls() {
    let (location, options) = s3(&["s3a://bucket/warehouse/t/"]);
    assert_eq!(location, "s3a://bucket/warehouse/t/");
    assert_eq!(options.endpoint, None);

    let (location, options) = s3(&["https://bucket.s3.us-west-2.amazonaws.com/t"]);
    assert_eq!(location, "s3://bucket/t");
    assert_eq!(options.region.as_deref(), Some("us-west-2"));

    let (location, options) = s3(&["https://s3.eu-central-1.amazonaws.com/bucket/w/t"]);
    assert_eq!(location, "s3://bucket/w/t");
    assert_eq!(options.region.as_deref(), Some("eu-central-1"));

    let (location, options) = s3(&["https://bucket.s3.amazonaws.com/t"]);
    assert_eq!(location, "s3://bucket/t");
    assert_eq!(options.region, None);

    let (location, options) = s3(&["http://127.0.0.1:9000/bucket/w/t/"]);
    assert_eq!(location, "s3://bucket/w/t/");
    assert_eq!(options.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
    assert!(options.allow_http);
}

#[test]
fn s3_credentials() {
    let (_, options) = s3(&["s3://b/t", "nosign"]);
    assert!(options.no_sign);
    let (_, options) = s3(&["s3://b/t", "AKID", "SECRET"]);
    assert_eq!(options.access_key_id.as_deref(), Some("AKID"));
    assert_eq!(options.secret_access_key.as_deref(), Some("SECRET"));
    assert_eq!(options.session_token, None);
    let (_, options) = s3(&["s3://b/t", "AKID", "SECRET", "TOKEN"]);
    assert_eq!(options.session_token.as_deref(), Some("TOKEN"));
    assert!(!format!("{options:?}").contains("SECRET"));
    assert!(!format!("{options:?}").contains("TOKEN"));
}

#[test]
fn s3_rejects() {
    for bad in [
        vec![],
        vec!["s3://b/t", "only-key"],
        vec!["s3://b/t", "a", "b", "c", "d"],
        vec!["ftp://host/b/t"],
        vec!["http://127.0.0.1:9000/"],
    ] {
        let err = StorageOptions::from_s3_engine_args(&args(&bad)).expect_err("must fail");
        assert_eq!(err.kind(), crate::ErrorKind::BadArguments, "{bad:?}");
    }
}

#[test]
fn azure_connection_strings() {
    let conn = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURE_EMULATOR_KEY};\
         BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
    );
    let (location, options) = azure(&[&conn, "cont", "/w/t"]);
    assert_eq!(
        location,
        "abfss://cont@devstoreaccount1.dfs.core.windows.net/w/t"
    );
    assert_eq!(options.access_key.as_deref(), Some(AZURE_EMULATOR_KEY));
    assert_eq!(
        options.endpoint.as_deref(),
        Some("http://127.0.0.1:10000/devstoreaccount1")
    );
    assert!(options.allow_http);

    let (location, options) = azure(&[
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net",
        "cont",
        "t",
    ]);
    assert_eq!(location, "abfss://cont@acct.dfs.core.windows.net/t");
    assert_eq!(
        options.endpoint.as_deref(),
        Some("https://acct.blob.core.windows.net")
    );
    assert!(!options.allow_http);
    assert!(!format!("{options:?}").contains("a2V5"));

    let (_, options) = azure(&["UseDevelopmentStorage=true", "cont", "t"]);
    assert!(options.use_emulator);
    assert_eq!(options.account.as_deref(), Some(AZURE_EMULATOR_ACCOUNT));
}

#[test]
fn azure_account_urls() {
    let (location, options) = azure(&[
        "https://acct.blob.core.windows.net/",
        "cont",
        "w/t",
        "acct",
        "S0VZ",
    ]);
    assert_eq!(location, "abfss://cont@acct.dfs.core.windows.net/w/t");
    assert_eq!(options.access_key.as_deref(), Some("S0VZ"));

    let (location, options) = azure(&["http://127.0.0.1:10000/devstoreaccount1", "c", "t"]);
    assert_eq!(
        location,
        "abfss://c@devstoreaccount1.dfs.core.windows.net/t"
    );
    assert!(options.allow_http);
}

#[test]
fn url_secrets_are_never_quoted() {
    let err = StorageOptions::from_azure_engine_args(&args(&[
        "ftp://a.blob.core.windows.net/?sv=1&sig=S3CR3T",
        "c",
        "t",
    ]))
    .expect_err("ftp");
    assert!(!err.message().contains("S3CR3T"), "{}", err.message());
    for url in [
        "https://b.s3.amazonaws.com/t?X-Amz-Signature=S3CR3T",
        "http://127.0.0.1:9000/b/t?token=S3CR3T",
        "s3://b/t?S3CR3T",
    ] {
        let err = StorageOptions::from_s3_engine_args(&args(&[url])).expect_err(url);
        assert_eq!(err.kind(), crate::ErrorKind::BadArguments, "{url}");
        assert!(!err.message().contains("S3CR3T"), "{}", err.message());
        assert!(err.message().contains("?[HIDDEN]"), "{}", err.message());
    }
}

/// A storage account URL with a SAS token as its query: the token signs the requests, the
/// URL before it is the endpoint (path-style for azurite), and neither `Debug` nor a message
/// repeats it.
#[test]
fn azure_account_url_with_a_sas_token() {
    let (location, options) = azure(&[
        "http://127.0.0.1:10000/devstoreaccount1?sv=2022-11-02&ss=b&sig=S3CR3T%3D",
        "cont",
        "w/t",
    ]);
    assert_eq!(
        location,
        "abfss://cont@devstoreaccount1.dfs.core.windows.net/w/t"
    );
    assert_eq!(
        options.endpoint.as_deref(),
        Some("http://127.0.0.1:10000/devstoreaccount1")
    );
    assert_eq!(
        options.sas_token.as_deref(),
        Some("sv=2022-11-02&ss=b&sig=S3CR3T%3D")
    );
    assert!(!format!("{options:?}").contains("S3CR3T"));
    let (_, options) = azure(&["https://acct.blob.core.windows.net/?sv=1&sig=S", "c", "t"]);
    assert_eq!(options.account.as_deref(), Some("acct"));
    assert_eq!(
        options.endpoint.as_deref(),
        Some("https://acct.blob.core.windows.net")
    );
    assert_eq!(options.sas_token.as_deref(), Some("sv=1&sig=S"));
    let err = StorageOptions::from_azure_engine_args(&args(&[
        "https://acct.blob.core.windows.net/?sv=1&sig=S3CR3T#x",
        "c",
        "t",
    ]))
    .expect_err("a fragment");
    assert!(!err.message().contains("S3CR3T"), "{}", err.message());
}

#[test]
fn azure_key_errors_never_quote_the_key() {
    // A key that is not base64: refused when the engine arguments are read, the key unquoted.
    for bad in [
        vec![
            "https://acct.blob.core.windows.net",
            "c",
            "t",
            "acct",
            "ab-dEF==",
        ],
        vec![
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=ab-dEF==",
            "c",
            "t",
        ],
        vec![
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abd=",
            "c",
            "t",
        ],
    ] {
        let err = StorageOptions::from_azure_engine_args(&args(&bad)).expect_err("bad key");
        assert_eq!(err.kind(), crate::ErrorKind::BadArguments, "{bad:?}");
        let message = err.message();
        assert!(message.contains("not valid base64"), "{message}");
        for secret in ["ab-d", "abd=", "45", "symbol"] {
            assert!(!message.contains(secret), "{message}");
        }
    }
    // A connection string whose parts do not parse: the part is not quoted (it may be a
    // fragment of a key with a `;` in it).
    let err = StorageOptions::from_azure_engine_args(&args(&[
        "AccountName=acct;AccountKey=a2V5;S3CR3T",
        "c",
        "t",
    ]))
    .expect_err("bad part");
    assert!(!err.message().contains("S3CR3T"), "{}", err.message());
    assert!(!err.message().contains("a2V5"), "{}", err.message());
}

#[test]
fn azure_rejects() {
    for bad in [
        vec!["https://acct.blob.core.windows.net", "c"],
        vec!["https://acct.blob.core.windows.net", "c", "t", "acct"],
        vec!["AccountName", "c", "t"],
        vec!["https://10.0.0.1", "c", "t"],
        vec!["ftp://acct", "c", "t"],
    ] {
        let err = StorageOptions::from_azure_engine_args(&args(&bad)).expect_err("must fail");
        assert_eq!(err.kind(), crate::ErrorKind::BadArguments, "{bad:?}");
    }
}

//! A denied statement makes no storage request: a table on the S3 emulator, served through a
//! request-counting store, and a user without privileges on it (icetrim's grant store), or a host's
//! own authorizer saying no. The same statements as `default` do reach storage (the counter
//! counts).

use std::sync::Arc;

use icetrim::engine::{Authorizer, Engine, GrantObject, Privilege, Session};
use icetrim::internals::generate::{GenerateOptions, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::RequestCounter;

use crate::support::s3_emulator;

/// Every statement a user without privileges on `t` must be refused before storage: procedures,
/// compaction, manifests, refs, properties, DESCRIBE, and their EXPLAIN.
const REFUSED: &[&str] = &[
    "ALTER TABLE t EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)",
    "EXPLAIN ALTER TABLE t EXECUTE remove_orphan_files()",
    "OPTIMIZE TABLE t",
    "OPTIMIZE TABLE t MANIFEST",
    "ALTER TABLE t CREATE BRANCH b",
    "ALTER TABLE t SET TBLPROPERTIES ('k' = 'v')",
    "DESCRIBE TABLE t",
];

/// Statements that list tables: they answer, with nothing of `t`, and never read it.
const FILTERED: &[&str] = &[
    "SELECT count() FROM system.iceberg_snapshots WHERE table = 't'",
    "SELECT count() FROM system.iceberg_files WHERE table = 't'",
    "SHOW TABLES",
];

/// An engine whose every table is served through `counter`, holding `t`, a generated table on
/// the S3 emulator.
async fn engine_on_s3(
    counter: &Arc<RequestCounter>,
    authorizer: Option<Arc<dyn Authorizer>>,
    registrar: &str,
) -> Engine {
    let (io, location) = s3_emulator("access-requests");
    let now_ms = icetrim::Clock::now_ms(&icetrim::SystemClock);
    let mut options = GenerateOptions::new(&location, FormatVersion::V2, 4, 1, 3, now_ms);
    options.write_data_files = false;
    generate(&io, &options)
        .await
        .expect("generate on the emulator");
    let mut builder = Engine::builder()
        .io_override(io.with_request_counter(Arc::clone(counter)))
        .setting("allow_experimental_iceberg_compaction", "1");
    if let Some(authorizer) = authorizer {
        builder = builder.authorizer(authorizer);
    }
    let engine = builder.build().expect("engine");
    let create = format!("CREATE TABLE t ENGINE = IcebergS3('{location}/', 'testing', 'testing')");
    let mut admin = engine.session();
    admin.set_user(registrar).expect("the registrar");
    admin.execute(&create).await.expect("register t");
    engine
}

/// Runs the refused and filtered statements as `session`'s user and demands zero requests.
async fn nothing_reaches_storage(session: &mut Session, counter: &RequestCounter) {
    for sql in REFUSED {
        let error = session.execute(sql).await.expect_err(sql);
        assert_eq!(error.code(), 497, "{sql}: {error}");
        assert_eq!(
            counter.snapshot().total(),
            0,
            "{sql}: {}",
            counter.snapshot()
        );
    }
    for sql in FILTERED {
        let results = session
            .execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let rows = &results[0].rows;
        assert!(
            rows.is_empty() || rows == &vec![vec![icetrim::format::Value::UInt(0)]],
            "{sql}: {rows:?}"
        );
        assert_eq!(
            counter.snapshot().total(),
            0,
            "{sql}: {}",
            counter.snapshot()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_grants_makes_no_storage_request() {
    let counter = RequestCounter::new();
    let engine = engine_on_s3(&counter, None, "default").await;
    engine
        .session()
        .execute("CREATE USER nobody; GRANT SELECT ON default.elsewhere TO nobody")
        .await
        .expect("user");
    let mut session = engine.session();
    session.set_user("nobody").expect("nobody exists");
    nothing_reaches_storage(&mut session, &counter).await;

    // The counter counts: the same reads as `default` make requests.
    let mut admin = engine.session();
    let results = admin
        .execute("SELECT count() FROM system.iceberg_snapshots WHERE table = 't'")
        .await
        .expect("default reads t");
    assert_eq!(results[0].rows, vec![vec![icetrim::format::Value::UInt(4)]]);
    assert!(counter.snapshot().get > 0, "{}", counter.snapshot());
}

/// A host's policy: only `ops` may do anything, and only on `default.t`.
#[derive(Debug)]
struct OpsOnly;

impl Authorizer for OpsOnly {
    fn allows(&self, user: &str, _: Privilege, object: &GrantObject) -> bool {
        user == "ops" && *object == GrantObject::table("default", "t")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_authorizer_decides_before_storage() {
    let counter = RequestCounter::new();
    let engine = engine_on_s3(&counter, Some(Arc::new(OpsOnly)), "ops").await;
    let mut session = engine.session();
    // The host names its principals; icetrim's own store is not asked.
    session
        .set_user("alice")
        .expect("any name with a host authorizer");
    nothing_reaches_storage(&mut session, &counter).await;
    let refused = session
        .execute("CREATE USER bob")
        .await
        .expect_err("host's users");
    assert_eq!(refused.code(), 497, "{refused}");
    session.set_user("ops").expect("ops");
    let refused = session
        .execute("SHOW GRANTS")
        .await
        .expect_err("host's grants");
    assert_eq!(refused.code(), 392, "{refused}");
    let explained = session
        .execute("EXPLAIN ALTER TABLE t EXECUTE expire_snapshots(retain_last = 1)")
        .await
        .expect("ops may");
    assert!(!explained[0].rows.is_empty());
    assert!(counter.snapshot().total() > 0);
}

/// The typed API through a session (`Session::table`) is checked as the statements are: a reader
/// (SELECT only) may read the table's metadata but not expire it, a maintainer (ALTER EXECUTE)
/// may expire but not set a property (ALTER SETTINGS), a stranger may not even read; nothing
/// denied reaches storage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typed_api_of_a_session_checks_the_same_privileges() {
    let counter = RequestCounter::new();
    let engine = engine_on_s3(&counter, None, "default").await;
    let mut admin = engine.session();
    admin
        .execute(
            "CREATE USER reader; CREATE USER ops; CREATE USER stranger;
             GRANT SELECT ON default.t TO reader; GRANT ALTER EXECUTE ON default.* TO ops",
        )
        .await
        .expect("users and grants");
    let before = counter.snapshot().total();
    let as_user = |name: &str| {
        let mut session = engine.session();
        session.set_user(name).expect("a known user");
        session
    };

    let reader = as_user("reader").table("t").await.expect("opens");
    let denied = reader.expire_snapshots().dry_run(true).execute().await;
    let denied = denied.expect_err("a reader may not expire");
    assert_eq!(
        denied.to_string(),
        "Code: 497. DB::Exception: reader: Not enough privileges. To execute this query, it's \
         necessary to have the grant ALTER EXECUTE ON default.t. (ACCESS_DENIED)"
    );
    let denied = reader.set_properties([("k", "v")]).execute().await;
    assert_eq!(denied.expect_err("nor set a property").code(), 497);
    assert_eq!(
        counter.snapshot().total(),
        before,
        "nothing denied reached storage"
    );
    #[cfg(feature = "datafusion")]
    {
        let snapshots = reader
            .metadata_table(icetrim::MetadataTable::Snapshots)
            .collect()
            .await
            .expect("a reader reads the metadata");
        let rows: usize = snapshots.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 4);
    }

    let ops = as_user("ops").table("t").await.expect("opens");
    let planned = ops
        .expire_snapshots()
        .retain_last(1)
        .dry_run(true)
        .execute()
        .await;
    assert!(planned.expect("ops expires").metrics.dry_run);
    let at = counter.snapshot().total();
    let denied = ops.set_properties([("k", "v")]).execute().await;
    let denied = denied.expect_err("ops may not set properties");
    assert!(
        denied.to_string().contains("ALTER SETTINGS ON default.t"),
        "{denied}"
    );
    assert_eq!(counter.snapshot().total(), at);

    #[cfg(feature = "datafusion")]
    {
        let stranger = as_user("stranger").table("t").await.expect("opens");
        let denied = stranger
            .metadata_table(icetrim::MetadataTable::Snapshots)
            .collect()
            .await
            .expect_err("a stranger may not read");
        assert_eq!(denied.code(), 497, "{denied}");
        assert_eq!(counter.snapshot().total(), at);
    }
}

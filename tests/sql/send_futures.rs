//! An embedding host spawns statements on its runtime: the futures of `Session::execute` and of
//! the typed builders are `Send` (`tokio::spawn` takes them), checked by compiling this file and
//! by running both on a multi-threaded runtime.

use icetrim::Table;
use icetrim::engine::Engine;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_and_builder_futures_can_be_spawned() {
    let engine = Engine::builder().build().unwrap();
    let statement = tokio::spawn(async move {
        let mut session = engine.session();
        session.execute("SHOW TABLES").await
    });
    let results = statement.await.unwrap().unwrap();
    assert_eq!(results.len(), 1);
    let dir = tempfile::tempdir().unwrap();
    let table = Table::open(dir.path().to_str().unwrap(), Default::default()).unwrap();
    let expiry = tokio::spawn(async move {
        table
            .expire_snapshots()
            .retain_last(1)
            .dry_run(true)
            .execute()
            .await
    });
    // An empty folder is no table: the builder's future ran to its error on another task.
    let error = expiry.await.unwrap().unwrap_err();
    assert!(!error.message().is_empty());
    let table = Table::open(dir.path().to_str().unwrap(), Default::default()).unwrap();
    let others = tokio::spawn(async move {
        let errors = [
            table.rewrite_manifests().execute().await.err(),
            table.rewrite_data_files().execute().await.err(),
            table.remove_orphan_files().execute().await.err(),
        ];
        errors.into_iter().filter(Option::is_some).count()
    });
    assert_eq!(others.await.unwrap(), 3, "no table: every builder fails");
}

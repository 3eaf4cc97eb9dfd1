//! Tests of `vended_store`: renew-and-retry on an expired answer, and giving up.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use object_store::ObjectStoreExt;
use object_store::memory::InMemory;

use super::*;
use crate::io::vended::{CredentialRefresh, S3Credential, VendedCredentials};
use crate::io::{FaultyStore, Op, StoreHook};

/// Refuses the next `refusals` requests as AWS refuses an expired session token.
#[derive(Debug, Default)]
struct Expiring {
    refusals: AtomicU32,
}

#[async_trait]
impl StoreHook for Expiring {
    async fn before(&self, _: Op, _: Option<&Path>) -> Result<()> {
        let refuse = self
            .refusals
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refuse {
            return Err(object_store::Error::Generic {
                store: "S3",
                source: "Server returned non-2xx status code: 400 Bad Request: <Error>\
                         <Code>ExpiredToken</Code><Token-0>SECRET-TOKEN</Token-0></Error>"
                    .into(),
            });
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
struct Catalog {
    calls: AtomicU64,
}

#[async_trait]
impl CredentialRefresh for Catalog {
    fn describe(&self) -> String {
        "table ns.t".into()
    }
    async fn refresh(&self) -> crate::error::Result<VendedCredentials> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(VendedCredentials {
            s3: Some(S3Credential {
                access_key_id: format!("K{n}"),
                secret_access_key: "s".into(),
                session_token: Some("SECRET-TOKEN".into()),
                expires_at_ms: None,
            }),
            ..Default::default()
        })
    }
}

async fn expiring(refusals: u32) -> (VendedStore, Arc<Expiring>, Arc<Catalog>) {
    let memory = Arc::new(InMemory::new());
    for name in ["a", "b", "c"] {
        memory
            .put(&Path::from(name), PutPayload::from_static(b"x"))
            .await
            .expect("put");
    }
    let hook = Arc::new(Expiring {
        refusals: AtomicU32::new(refusals),
    });
    let faulty = FaultyStore::hooked(memory, Arc::clone(&hook) as Arc<dyn StoreHook>);
    let catalog = Arc::new(Catalog::default());
    let source = VendedSource::new(
        VendedCredentials::default(),
        Arc::clone(&catalog) as Arc<dyn CredentialRefresh>,
    );
    let store = VendedStore::new(Arc::new(faulty), source, Family::S3, None);
    (store, hook, catalog)
}

#[tokio::test]
async fn an_expired_answer_renews_once_and_retries_once() {
    let (store, _, catalog) = expiring(1).await;
    let got = store
        .get(&Path::from("a"))
        .await
        .expect("read after renewal");
    assert_eq!(got.bytes().await.expect("bytes").as_ref(), b"x");
    assert_eq!(catalog.calls.load(Ordering::SeqCst), 1);
    // A listing refused midway goes on.
    let (store, _, catalog) = expiring(1).await;
    let listed: Vec<_> = store.list(None).collect().await;
    assert_eq!(listed.iter().filter(|m| m.is_ok()).count(), 3, "{listed:?}");
    assert_eq!(catalog.calls.load(Ordering::SeqCst), 1);
    // Deletes: every key answered, in order.
    let (store, _, catalog) = expiring(1).await;
    let paths = ["a", "b", "c"].map(Path::from);
    let answers: Vec<_> = store
        .delete_stream(futures::stream::iter(paths.clone().map(Ok)).boxed())
        .collect()
        .await;
    let deleted: Vec<Path> = answers.into_iter().map(|a| a.expect("deleted")).collect();
    assert_eq!(deleted, paths);
    assert_eq!(catalog.calls.load(Ordering::SeqCst), 1);
    assert!(store.head(&Path::from("a")).await.is_err());
}

#[tokio::test]
async fn a_store_that_keeps_refusing_fails_after_one_renewal_without_the_token() {
    let (store, hook, catalog) = expiring(100).await;
    let e = store
        .get(&Path::from("a"))
        .await
        .expect_err("refused twice");
    let text = e.to_string();
    assert!(
        text.contains("ExpiredToken") && text.contains("giving up"),
        "{text}"
    );
    assert!(!text.contains("SECRET-TOKEN"), "{text}");
    assert_eq!(catalog.calls.load(Ordering::SeqCst), 1);
    // No more renewals on expired answers: the next request fails at once.
    let before = hook.refusals.load(Ordering::SeqCst);
    let e = store.head(&Path::from("b")).await.expect_err("refused");
    assert!(e.to_string().contains("refused as expired before"), "{e}");
    assert_eq!(catalog.calls.load(Ordering::SeqCst), 1);
    assert_eq!(hook.refusals.load(Ordering::SeqCst), before - 1);
    // Deletes refused the same way: nothing is deleted, each key fails.
    let answers: Vec<_> = store
        .delete_stream(futures::stream::iter([Ok(Path::from("c"))]).boxed())
        .collect()
        .await;
    assert!(answers.iter().all(|a| a.is_err()), "{answers:?}");
    assert_eq!(catalog.calls.load(Ordering::SeqCst), 1);
}

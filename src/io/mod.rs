//! Storage: turns the URIs Iceberg metadata names (`/abs/path`, `file://`, `s3://`, `abfss://`,
//! `gs://`, `memory://`, …) into an object_store plus a path, and offers the operations
//! maintenance needs: read (whole, range), head, create-if-absent write, overwrite, delete (a
//! missing file counts as deleted), bulk delete, and streaming recursive listing with size and
//! last-modified (plainly or fanned out over the first directory level; a local folder is walked
//! directly, never following a symbolic link below the table location, `local_walk`).
//!
//! A [`FileIO`] serves the URIs of the store families it was configured for and keeps one client
//! per store (bucket, or account and container), built on first use. Path identity
//! ([`path_key`], [`is_under`]), credentials ([`StorageOptions`]), request counting
//! ([`RequestCounter`]) and fault injection ([`FaultyStore`]) live in the submodules, as does the
//! one rule that masks secrets in every URL icetrim prints ([`mask_url`]).
//!
//! Everything above this module speaks full URIs (strings, as written in metadata); only tests
//! and embedders that inject a store see `object_store` types.

mod build;
mod counting;
mod deletes;
mod errors;
mod faulty;
#[cfg(any(feature = "s3", feature = "azure", feature = "gcs"))]
mod http;
mod latency;
mod local_delete;
mod local_fs;
mod local_walk;
mod location;
mod mask;
mod ops;
mod options;
mod path_key;
mod read_cache;
mod sas_store;
mod vended;
mod vended_store;
mod writes;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use object_store::{ObjectStore, path::Path as ObjectPath};

pub use counting::{CountingStore, RequestCounter, RequestCounts};
pub use errors::{delete_failure_kind, unsettled_write_kind};
pub use faulty::{Fault, FaultInjector, FaultyStore, HookFn, Op, StoreHook};
pub use latency::{Latency, LatencyProfile, LatencyStats, LatencyStore};
pub use location::{Family, Location, StoreKey};
pub use mask::{
    HIDDEN, check_engine_urls, mask_target, mask_url, mask_urls_in, refuse_url_credentials,
    refuse_url_query,
};
pub use ops::{FileInfo, Listed, SkipReason};
pub use options::{
    AZURE_EMULATOR_ACCOUNT, AZURE_EMULATOR_KEY, AzureOptions, GcsOptions, S3Options, StorageOptions,
};
pub use path_key::{is_under, path_key, path_key_into};
pub use read_cache::{ReadCache, ReadCacheStats};
pub use vended::{
    AzureSas, CredentialRefresh, REFRESH_MARGIN_MS, S3Credential, VendedCredentials, VendedSource,
    sas_expiry_ms,
};
pub use writes::{Upload, WriteOutcome};

use crate::error::{Error, Result};

/// Object storage for a set of URI families, one cached client per store.
#[derive(Clone)]
pub struct FileIO {
    inner: Arc<Inner>,
    /// The statement's cache of immutable files ([`FileIO::with_read_cache`]), if any.
    cache: Option<Arc<ReadCache>>,
}

struct Inner {
    options: StorageOptions,
    /// Families whose stores are built on demand from `options`.
    families: Vec<Family>,
    stores: Mutex<HashMap<StoreKey, Arc<dyn ObjectStore>>>,
    /// Wrappers put around every store, innermost first.
    layers: Vec<Layer>,
    /// Asked first for an object-store (S3, Azure, GCS) URI's store (a host's registered
    /// stores); `None` there builds the store from `options`.
    resolver: Option<StoreResolver>,
}

/// Finds the store of an object-store URI among stores someone else built (a DataFusion host's
/// `RuntimeEnv`): `Some` is used as the store of that bucket or container, `None` lets icetrim
/// build its own. Never asked for local paths, which icetrim always walks itself (it never
/// follows a symbolic link below a table).
pub type StoreResolver = Arc<dyn Fn(&url::Url) -> Option<Arc<dyn ObjectStore>> + Send + Sync>;

/// A store wrapper applied to every store of a `FileIO`.
#[derive(Clone)]
enum Layer {
    Count(Arc<RequestCounter>),
    Faults(Arc<FaultInjector>),
    Hook(Arc<dyn StoreHook>),
    Latency(Arc<Latency>),
}

impl Layer {
    fn wrap(&self, key: &StoreKey, store: Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
        match self {
            Layer::Count(counter) => Arc::new(CountingStore::new(
                store,
                Arc::clone(counter),
                ops::list_page_size(key.family),
            )),
            Layer::Faults(injector) => Arc::new(FaultyStore::new(store, Arc::clone(injector))),
            Layer::Hook(hook) => Arc::new(FaultyStore::hooked(store, Arc::clone(hook))),
            Layer::Latency(latency) => Arc::new(LatencyStore::new(store, Arc::clone(latency))),
        }
    }
}

impl std::fmt::Debug for FileIO {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stores: Vec<String> = match self.inner.stores.lock() {
            Ok(stores) => stores.keys().map(ToString::to_string).collect(),
            Err(_) => Vec::new(),
        };
        f.debug_struct("FileIO")
            .field("families", &self.inner.families)
            .field("stores", &stores)
            .field("options", &self.inner.options)
            .finish()
    }
}

impl FileIO {
    fn with_parts(
        options: StorageOptions,
        families: Vec<Family>,
        stores: HashMap<StoreKey, Arc<dyn ObjectStore>>,
    ) -> Self {
        FileIO {
            inner: Arc::new(Inner {
                options,
                families,
                stores: Mutex::new(stores),
                layers: Vec::new(),
                resolver: None,
            }),
            cache: None,
        }
    }

    /// Local disk: serves absolute paths and `file://` URIs.
    pub fn local() -> Self {
        Self::with_parts(
            StorageOptions::default(),
            vec![Family::File],
            HashMap::new(),
        )
    }

    /// A fresh in-memory store serving every `memory://` URI; clones share it.
    pub fn memory() -> Self {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        Self::with_parts(
            StorageOptions::default(),
            Vec::new(),
            HashMap::from([(memory_key(), store)]),
        )
    }

    /// Remote stores (S3, Azure, GCS) configured by `options`; one client per bucket or
    /// container, built on first use. Local paths and `memory://` are refused.
    pub fn new(options: StorageOptions) -> Self {
        Self::with_parts(
            options,
            vec![Family::S3, Family::Azure, Family::Gcs],
            HashMap::new(),
        )
    }

    /// [`FileIO::new`]'s remote stores and local disk: for a catalog table on local disk
    /// (the catalog layer checks its location against the database's `storage_local_root`).
    pub fn with_local_disk(options: StorageOptions) -> Self {
        Self::with_parts(
            options,
            vec![Family::S3, Family::Azure, Family::Gcs, Family::File],
            HashMap::new(),
        )
    }

    /// Serve the store that `base_uri` names (`memory://`, `/`, `s3://bucket`,
    /// `abfss://c@account.dfs.core.windows.net`, ...) with `store`; nothing else is served.
    /// For tests that inject a [`FaultyStore`] or any other wrapper.
    pub fn from_store(base_uri: &str, store: Arc<dyn ObjectStore>) -> Result<Self> {
        let location = Location::parse(base_uri)?;
        let options = StorageOptions::default();
        let key = store_key(&location.store, &options);
        Ok(Self::with_parts(
            options,
            Vec::new(),
            HashMap::from([(key, store)]),
        ))
    }

    /// The same stores, with every request (from now on, through the returned `FileIO`)
    /// counted into `counter`.
    pub fn with_request_counter(&self, counter: Arc<RequestCounter>) -> Self {
        self.with_layer(Layer::Count(counter))
    }

    /// The same stores, obeying `injector` (through the returned `FileIO`): for crash tests.
    pub fn with_faults(&self, injector: Arc<FaultInjector>) -> Self {
        self.with_layer(Layer::Faults(injector))
    }

    /// The same stores, running `hook` around every call (through the returned `FileIO`): for
    /// tests that watch or steer requests on stores the `FileIO` builds itself.
    pub fn with_hook(&self, hook: Arc<dyn StoreHook>) -> Self {
        self.with_layer(Layer::Hook(hook))
    }

    /// The same stores, every request (through the returned `FileIO`) waiting as a remote store
    /// would ([`LatencyStore`]): for tests and benchmarks only; nothing in a statement's
    /// configuration reaches it.
    pub fn with_latency(&self, latency: Arc<Latency>) -> Self {
        self.with_layer(Layer::Latency(latency))
    }

    fn with_layer(&self, layer: Layer) -> Self {
        let stores = match self.inner.stores.lock() {
            Ok(stores) => stores
                .iter()
                .map(|(key, store)| (key.clone(), layer.wrap(key, Arc::clone(store))))
                .collect(),
            Err(_) => HashMap::new(),
        };
        let mut layers = self.inner.layers.clone();
        layers.push(layer);
        FileIO {
            inner: Arc::new(Inner {
                options: self.inner.options.clone(),
                families: self.inner.families.clone(),
                stores: Mutex::new(stores),
                layers,
                resolver: self.inner.resolver.clone(),
            }),
            cache: self.cache.clone(),
        }
    }

    /// The same families and options, with object-store URIs served first by `resolver`'s
    /// stores (see [`StoreResolver`]).
    pub fn with_store_resolver(&self, resolver: StoreResolver) -> Self {
        FileIO {
            inner: Arc::new(Inner {
                options: self.inner.options.clone(),
                families: self.inner.families.clone(),
                stores: Mutex::new(HashMap::new()),
                layers: self.inner.layers.clone(),
                resolver: Some(resolver),
            }),
            cache: self.cache.clone(),
        }
    }

    /// The same stores, reading manifest lists and manifests ([`FileIO::read_immutable_and`])
    /// through `cache`: one statement's reads, so that a re-plan reads only new files.
    pub fn with_read_cache(&self, cache: Arc<ReadCache>) -> Self {
        FileIO {
            inner: Arc::clone(&self.inner),
            cache: Some(cache),
        }
    }

    /// The read cache, if this `FileIO` has one.
    pub fn read_cache(&self) -> Option<&Arc<ReadCache>> {
        self.cache.as_ref()
    }

    /// The counts of the last request counter added, when counting.
    pub fn request_counts(&self) -> Option<RequestCounts> {
        self.inner
            .layers
            .iter()
            .rev()
            .find_map(|layer| match layer {
                Layer::Count(counter) => Some(counter.snapshot()),
                Layer::Faults(_) | Layer::Hook(_) | Layer::Latency(_) => None,
            })
    }

    /// Map a URI to the object path within its store.
    pub fn object_path(&self, uri: &str) -> Result<ObjectPath> {
        Location::parse(uri)?.object_path()
    }

    /// Whether a read of `location` may bypass object_store (see `local_fs`): a plain path on a
    /// local store this `FileIO` built itself, with no counting or fault layer to go through.
    fn reads_local_directly(&self, location: &Location) -> bool {
        location.store.family == Family::File
            && self.inner.layers.is_empty()
            && self.inner.families.contains(&Family::File)
            && local_fs::is_plain(&location.path)
    }

    /// Whether a listing (or delete) of `location` may bypass object_store (see `local_walk`):
    /// any path on a local store this `FileIO` built itself, with no layer to go through.
    fn lists_local_directly(&self, location: &Location) -> bool {
        location.store.family == Family::File
            && self.inner.layers.is_empty()
            && self.inner.families.contains(&Family::File)
    }

    /// The parsed location, its object path and the store that serves it.
    pub(crate) fn resolve(
        &self,
        uri: &str,
    ) -> Result<(Location, ObjectPath, Arc<dyn ObjectStore>)> {
        let location = Location::parse(uri)?;
        let path = location.object_path()?;
        let store = self.store_for(&location.store, uri)?;
        Ok((location, path, store))
    }

    fn store_for(&self, key: &StoreKey, uri: &str) -> Result<Arc<dyn ObjectStore>> {
        let key = store_key(key, &self.inner.options);
        let mut stores = self
            .inner
            .stores
            .lock()
            .map_err(|_| Error::logical("FileIO store cache poisoned"))?;
        if let Some(store) = stores.get(&key) {
            return Ok(Arc::clone(store));
        }
        if !self.inner.families.contains(&key.family) {
            let served: Vec<String> = self
                .inner
                .families
                .iter()
                .map(ToString::to_string)
                .chain(stores.keys().map(ToString::to_string))
                .collect();
            return Err(Error::bad_arguments(format!(
                "Cannot access '{uri}': this table's storage serves only {}",
                served.join(", ")
            )));
        }
        if let Some(mut store) = self.resolved(&key, uri) {
            for layer in &self.inner.layers {
                store = layer.wrap(&key, store);
            }
            stores.insert(key, Arc::clone(&store));
            return Ok(store);
        }
        let mut store = build::build_store(&key, &self.inner.options)
            .map_err(|e| e.context(format!("Cannot access '{uri}'")))?;
        if let Some(source) = build::vended_for(&key, &self.inner.options) {
            let blobs = build::azure_blobs(&key, &self.inner.options);
            store = Arc::new(vended_store::VendedStore::new(
                store, source, key.family, blobs,
            ));
        } else if let Some((blobs, token)) = build::static_sas(&key, &self.inner.options) {
            store = Arc::new(sas_store::SasStore::new(store, blobs, &token));
        }
        for layer in &self.inner.layers {
            store = layer.wrap(&key, store);
        }
        stores.insert(key, Arc::clone(&store));
        Ok(store)
    }
}

impl FileIO {
    /// The resolver's store for the object-store URI `uri`, if it has one.
    fn resolved(&self, key: &StoreKey, uri: &str) -> Option<Arc<dyn ObjectStore>> {
        let resolver = self.inner.resolver.as_ref()?;
        if !matches!(key.family, Family::S3 | Family::Azure | Family::Gcs) {
            return None;
        }
        let url = url::Url::parse(uri).ok()?;
        resolver(&url)
    }
}

fn memory_key() -> StoreKey {
    StoreKey {
        family: Family::Memory,
        bucket: String::new(),
        account: None,
    }
}

/// The cache key: an Azure URI without an account means the configured (or emulator) account.
fn store_key(key: &StoreKey, options: &StorageOptions) -> StoreKey {
    let mut key = key.clone();
    if key.family == Family::Azure && key.account.is_none() {
        key.account = options.azure.account.clone().or_else(|| {
            options
                .azure
                .use_emulator
                .then(|| AZURE_EMULATOR_ACCOUNT.to_string())
        });
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(io: &FileIO, uri: &str) -> Arc<dyn ObjectStore> {
        match io.resolve(uri) {
            Ok((_, _, store)) => store,
            Err(e) => panic!("{uri}: {e}"),
        }
    }

    fn emulator_options() -> StorageOptions {
        StorageOptions {
            s3: S3Options {
                access_key_id: Some("k".into()),
                secret_access_key: Some("s".into()),
                endpoint: Some("http://127.0.0.1:9".into()),
                allow_http: true,
                ..Default::default()
            },
            azure: AzureOptions {
                account: Some("acct".into()),
                access_key: Some(AZURE_EMULATOR_KEY.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[cfg(all(feature = "s3", feature = "azure"))]
    #[test]
    fn one_store_per_bucket() {
        let io = FileIO::new(emulator_options());
        let a = store(&io, "s3://b/t/x");
        assert!(Arc::ptr_eq(&a, &store(&io, "s3a://b/other")));
        assert!(Arc::ptr_eq(&a, &store(&io, "s3n://b//t/x")));
        assert!(!Arc::ptr_eq(&a, &store(&io, "s3://c/t/x")));
        let az = store(&io, "abfss://cont@acct.dfs.core.windows.net/t");
        assert!(Arc::ptr_eq(&az, &store(&io, "az://cont/t")));
        assert!(Arc::ptr_eq(
            &az,
            &store(&io, "wasbs://cont@acct.blob.core.windows.net/t")
        ));
        assert!(!Arc::ptr_eq(&az, &store(&io, "az://other/t")));
    }

    #[test]
    fn memory_is_shared_by_clones_and_layers() {
        let io = FileIO::memory();
        let a = store(&io, "memory:///x");
        assert!(Arc::ptr_eq(&a, &store(&io.clone(), "memory://y")));
        let counted = io.with_request_counter(RequestCounter::new());
        assert!(counted.request_counts().is_some());
        assert!(io.request_counts().is_none());
    }

    #[test]
    fn refuses_families_it_was_not_given() {
        let io = FileIO::new(emulator_options());
        for uri in ["/etc/passwd", "file:///etc/passwd", "memory://x"] {
            let err = io
                .resolve(uri)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(uri), "{uri}: {err}");
        }
        let local = FileIO::local();
        let err = local.resolve("s3://b/x").err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("s3://b/x")));
    }
}

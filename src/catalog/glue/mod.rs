//! AWS Glue as an Iceberg catalog (cargo feature `glue`): what a `DataLakeCatalog` database with
//! `catalog_type = 'glue'` reads and commits through.
//!
//! Glue keeps a table's current metadata file in the table's `Parameters`: `table_type = ICEBERG`
//! (any case) marks an Iceberg table, `metadata_location` names its current metadata file and
//! `previous_metadata_location` the one before (the convention of Java's `GlueCatalog` and
//! pyiceberg's). The calls:
//! - [`GlueCatalog::databases`] (`GetDatabases`) and [`GlueCatalog::iceberg_tables`] (`GetTables`,
//!   Iceberg tables only): the namespaces and tables of the database.
//! - [`GlueCatalog::load`] (`GetTable`): the table's `VersionId` and `metadata_location`; a table
//!   that is not Iceberg, or has no metadata location, is refused.
//! - [`GlueCatalog::update_metadata_location`] (`UpdateTable` with the `VersionId` read, so Glue
//!   applies it only if nobody changed the table since: optimistic locking): the new
//!   `metadata_location` and, as `previous_metadata_location`, the one read. The rest of the table
//!   (storage descriptor, columns, other parameters, owner, description) is sent back as read.
//!
//! [`commit::commit`] is the whole commit protocol on top of these (write the next metadata file, swap
//! the pointer, confirm with `GetTable`), see there; [`naming`] its pure parts (the next file's
//! name, the parameters sent, what confirms a commit); [`GlueDatabase`] the
//! [`crate::catalog::Catalog`] a `DataLakeCatalog` database with `catalog_type = 'glue'` is.
//!
//! The client is the AWS SDK's (`aws-sdk-glue`, no default features) over reqwest ([`http`]):
//! SigV4 signing with the database's `aws_access_key_id` / `aws_secret_access_key` (else the
//! `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` environment), its `region`
//! (else `AWS_REGION` / `AWS_DEFAULT_REGION`, else `us-east-1`) and, when given, the endpoint URL
//! (else AWS's regional Glue endpoint). Reads retry transient failures (the SDK's standard
//! policy, 3 attempts); `UpdateTable` is sent once, never retried by the SDK, so a
//! `ConcurrentModificationException` always means "this request was rejected".
//!
//! Secrets never reach a message or `Debug` output: errors name the endpoint, region and table,
//! and quote what Glue said (Glue's messages do not echo keys).

mod catalog;
pub mod commit;
mod errors;
pub mod http;
pub mod naming;

use std::collections::HashMap;
use std::fmt;

use aws_sdk_glue::config::retry::RetryConfig;
use aws_sdk_glue::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_glue::types::{BatchGetTableOptimizerEntry, Table, TableInput, TableOptimizerType};

use crate::error::Result;
use errors::{GlueCall, sdk_error};

pub use catalog::GlueDatabase;

/// `Parameters` key of the table type (`ICEBERG` for Iceberg tables).
pub const TABLE_TYPE: &str = "table_type";
/// `Parameters` key of the current metadata file.
pub const METADATA_LOCATION: &str = "metadata_location";
/// `Parameters` key of the metadata file before the current one.
pub const PREVIOUS_METADATA_LOCATION: &str = "previous_metadata_location";
/// The region when neither the settings nor the environment name one (SigV4 needs a region).
pub const DEFAULT_REGION: &str = "us-east-1";

/// How to reach a Glue catalog: the `DataLakeCatalog` database's URL argument and settings.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct GlueOptions {
    /// The Glue endpoint (`http://127.0.0.1:5000`); `None`: AWS's endpoint for the region.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    /// The AWS account id of the catalog, when it is not the caller's.
    pub catalog_id: Option<String>,
}

impl fmt::Debug for GlueOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |s: &Option<String>| if s.is_some() { "<hidden>" } else { "<none>" };
        f.debug_struct("GlueOptions")
            .field(
                "endpoint",
                &self.endpoint.as_deref().map(crate::io::mask_url),
            )
            .field("region", &self.region)
            .field("access_key_id", &hidden(&self.access_key_id))
            .field("secret_access_key", &hidden(&self.secret_access_key))
            .field("session_token", &hidden(&self.session_token))
            .field("catalog_id", &self.catalog_id)
            .finish()
    }
}

impl GlueOptions {
    /// The region used: the setting, else `AWS_REGION` / `AWS_DEFAULT_REGION`, else `us-east-1`.
    pub fn effective_region(&self) -> String {
        self.region
            .clone()
            .filter(|r| !r.is_empty())
            .or_else(|| env_nonempty("AWS_REGION"))
            .or_else(|| env_nonempty("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| DEFAULT_REGION.to_string())
    }

    /// How messages name the catalog: `Glue catalog at <endpoint> (region r)` or `AWS Glue
    /// (region r)`.
    pub fn describe(&self) -> String {
        match &self.endpoint {
            Some(endpoint) => format!(
                "Glue catalog at {} (region {})",
                crate::io::mask_url(endpoint),
                self.effective_region()
            ),
            None => format!("AWS Glue (region {})", self.effective_region()),
        }
    }

    fn credentials(&self) -> Result<Credentials> {
        let key = self
            .access_key_id
            .clone()
            .or_else(|| env_nonempty("AWS_ACCESS_KEY_ID"));
        let secret = self
            .secret_access_key
            .clone()
            .or_else(|| env_nonempty("AWS_SECRET_ACCESS_KEY"));
        let token = if self.access_key_id.is_some() {
            self.session_token.clone()
        } else {
            self.session_token
                .clone()
                .or_else(|| env_nonempty("AWS_SESSION_TOKEN"))
        };
        match (key, secret) {
            (Some(key), Some(secret)) => Ok(Credentials::new(key, secret, token, None, "icetrim")),
            (Some(_), None) => Err(errors::bad_settings(
                self,
                "aws_access_key_id is set but aws_secret_access_key is not",
            )),
            (None, Some(_)) => Err(errors::bad_settings(
                self,
                "aws_secret_access_key is set but aws_access_key_id is not",
            )),
            (None, None) => Err(errors::bad_settings(
                self,
                "no credentials: set aws_access_key_id and aws_secret_access_key, or the \
                 AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY environment variables",
            )),
        }
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A Glue catalog client.
#[derive(Clone)]
pub struct GlueCatalog {
    client: aws_sdk_glue::Client,
    options: GlueOptions,
}

impl fmt::Debug for GlueCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlueCatalog")
            .field("options", &self.options)
            .finish()
    }
}

/// A Glue table as `GetTable` returned it, with its Iceberg pointer.
#[derive(Debug, Clone)]
pub struct GlueTable {
    pub database: String,
    pub name: String,
    /// The `VersionId` the next `UpdateTable` is conditioned on.
    pub version_id: Option<String>,
    /// `Parameters.metadata_location`: the current metadata file.
    pub metadata_location: String,
    table: Table,
}

/// What an `UpdateTable` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Glue answered success.
    Applied,
    /// Glue rejected the request: it was not applied. `conflict`: because the table changed
    /// since it was read (`ConcurrentModificationException`): re-read and re-plan; otherwise
    /// `error` is what to report.
    Rejected {
        conflict: bool,
        error: crate::error::Error,
    },
    /// No answer (timeout, lost connection, a server error): it may or may not have been applied.
    Unknown { why: String },
}

impl GlueCatalog {
    /// A client for `options` (no I/O yet). Missing credentials are `BAD_ARGUMENTS`.
    pub fn new(options: GlueOptions) -> Result<Self> {
        let http = http::ReqwestHttpClient::new().map_err(|e| {
            errors::bad_settings(&options, &format!("cannot build an HTTP client: {e}"))
        })?;
        let mut config = aws_sdk_glue::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(options.effective_region()))
            .credentials_provider(options.credentials()?)
            .http_client(http.shared())
            .retry_config(RetryConfig::standard().with_max_attempts(3));
        if let Some(endpoint) = &options.endpoint {
            url::Url::parse(endpoint).map_err(|e| {
                errors::bad_settings(&options, &format!("the catalog URL does not parse: {e}"))
            })?;
            config = config.endpoint_url(endpoint.trim_end_matches('/'));
        }
        Ok(GlueCatalog {
            client: aws_sdk_glue::Client::from_conf(config.build()),
            options,
        })
    }

    /// The options this client was built with.
    pub fn options(&self) -> &GlueOptions {
        &self.options
    }

    /// Every database (namespace) of the catalog, in Glue's order.
    pub async fn databases(&self) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let mut token = None;
        loop {
            let answer = self
                .client
                .get_databases()
                .set_catalog_id(self.options.catalog_id.clone())
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| sdk_error(&self.options, GlueCall::Databases, None, e))?;
            names.extend(answer.database_list().iter().map(|d| d.name().to_string()));
            token = answer
                .next_token()
                .filter(|t| !t.is_empty())
                .map(String::from);
            if token.is_none() {
                return Ok(names);
            }
        }
    }

    /// The Iceberg tables of `database` (`Parameters.table_type` is `ICEBERG`), in Glue's order.
    pub async fn iceberg_tables(&self, database: &str) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let mut token = None;
        loop {
            let answer = self
                .client
                .get_tables()
                .set_catalog_id(self.options.catalog_id.clone())
                .database_name(database)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| {
                    sdk_error(&self.options, GlueCall::Tables, Some((database, None)), e)
                })?;
            names.extend(
                answer
                    .table_list()
                    .iter()
                    .filter(|t| naming::is_iceberg(t.parameters()))
                    .map(|t| t.name().to_string()),
            );
            token = answer
                .next_token()
                .filter(|t| !t.is_empty())
                .map(String::from);
            if token.is_none() {
                return Ok(names);
            }
        }
    }

    /// The kinds of table optimizer (`BatchGetTableOptimizer`) that are on for the table. Sent
    /// once, without the client's retries: an endpoint or a role that cannot answer (no
    /// `glue:GetTableOptimizer` permission, an emulator without the operation) is an error the
    /// caller takes as "cannot tell".
    pub async fn enabled_optimizers(
        &self,
        database: &str,
        table: &str,
    ) -> Result<Vec<TableOptimizerType>> {
        let kinds = [
            TableOptimizerType::Compaction,
            TableOptimizerType::Retention,
            TableOptimizerType::OrphanFileDeletion,
        ];
        let catalog_id = self.options.catalog_id.clone();
        let entries = kinds.iter().map(|kind| {
            BatchGetTableOptimizerEntry::builder()
                .set_catalog_id(catalog_id.clone())
                .database_name(database)
                .table_name(table)
                .r#type(kind.clone())
                .build()
        });
        let once = aws_sdk_glue::config::Builder::default().retry_config(RetryConfig::disabled());
        let answer = self
            .client
            .batch_get_table_optimizer()
            .set_entries(Some(entries.collect()))
            .customize()
            .config_override(once)
            .send()
            .await
            .map_err(|e| {
                sdk_error(
                    &self.options,
                    GlueCall::Optimizers,
                    Some((database, Some(table))),
                    e,
                )
            })?;
        Ok(answer
            .table_optimizers()
            .iter()
            .filter_map(|found| found.table_optimizer())
            .filter(|o| o.configuration().and_then(|c| c.enabled()) == Some(true))
            .filter_map(|o| o.r#type().cloned())
            .collect())
    }

    /// `GetTable`: the table and its current metadata location. A table that is not Iceberg or
    /// has no `metadata_location` is refused (`NOT_IMPLEMENTED` / `INCORRECT_DATA`), an unknown
    /// one is `UNKNOWN_TABLE`.
    pub async fn load(&self, database: &str, table: &str) -> Result<GlueTable> {
        let answer = self
            .client
            .get_table()
            .set_catalog_id(self.options.catalog_id.clone())
            .database_name(database)
            .name(table)
            .send()
            .await
            .map_err(|e| {
                sdk_error(
                    &self.options,
                    GlueCall::Table,
                    Some((database, Some(table))),
                    e,
                )
            })?;
        let Some(found) = answer.table() else {
            return Err(errors::malformed(
                &self.options,
                (database, table),
                "GetTable answered without a table",
            ));
        };
        let parameters = found.parameters();
        if !naming::is_iceberg(parameters) {
            return Err(errors::not_iceberg(
                &self.options,
                (database, table),
                parameters.and_then(|p| naming::parameter(p, TABLE_TYPE)),
            ));
        }
        let Some(metadata_location) = parameters
            .and_then(|p| naming::parameter(p, METADATA_LOCATION))
            .filter(|l| !l.is_empty())
        else {
            return Err(errors::malformed(
                &self.options,
                (database, table),
                "the Iceberg table has no metadata_location parameter",
            ));
        };
        Ok(GlueTable {
            database: database.to_string(),
            name: table.to_string(),
            version_id: found.version_id().map(String::from),
            metadata_location: metadata_location.to_string(),
            table: found.clone(),
        })
    }

    /// `UpdateTable` conditioned on `loaded.version_id`: point the table at `new_location`
    /// (`previous_metadata_location` = the location read), `properties` mirrored into the
    /// parameters as Java and pyiceberg do. Sent once; see [`UpdateOutcome`].
    pub async fn update_metadata_location(
        &self,
        loaded: &GlueTable,
        new_location: &str,
        properties: &std::collections::BTreeMap<String, String>,
    ) -> Result<UpdateOutcome> {
        let input = table_input(loaded, new_location, properties).map_err(|e| {
            errors::malformed(
                &self.options,
                (&loaded.database, &loaded.name),
                &format!("cannot build the UpdateTable request: {e}"),
            )
        })?;
        let sent = self
            .client
            .update_table()
            .set_catalog_id(self.options.catalog_id.clone())
            .database_name(&loaded.database)
            .table_input(input)
            .skip_archive(true)
            .set_version_id(loaded.version_id.clone())
            .customize()
            .config_override(aws_sdk_glue::Config::builder().retry_config(RetryConfig::disabled()))
            .send()
            .await;
        match sent {
            Ok(_) => Ok(UpdateOutcome::Applied),
            Err(e) => Ok(errors::update_failure(
                &self.options,
                (&loaded.database, &loaded.name),
                e,
            )),
        }
    }
}

/// The `TableInput` of an `UpdateTable`: the table as read, with the new pointer.
fn table_input(
    loaded: &GlueTable,
    new_location: &str,
    properties: &std::collections::BTreeMap<String, String>,
) -> std::result::Result<TableInput, aws_sdk_glue::error::BuildError> {
    let t = &loaded.table;
    let parameters: HashMap<String, String> = naming::updated_parameters(
        t.parameters(),
        new_location,
        &loaded.metadata_location,
        properties,
    );
    TableInput::builder()
        .name(t.name())
        .set_description(t.description().map(String::from))
        .set_owner(t.owner().map(String::from))
        .set_last_access_time(t.last_access_time().cloned())
        .set_last_analyzed_time(t.last_analyzed_time().cloned())
        .retention(t.retention())
        .set_storage_descriptor(t.storage_descriptor().cloned())
        .set_partition_keys(Some(t.partition_keys().to_vec()).filter(|k| !k.is_empty()))
        .set_view_original_text(t.view_original_text().map(String::from))
        .set_view_expanded_text(t.view_expanded_text().map(String::from))
        .set_table_type(t.table_type().map(String::from))
        .set_target_table(t.target_table().cloned())
        .set_parameters(Some(parameters))
        .build()
}

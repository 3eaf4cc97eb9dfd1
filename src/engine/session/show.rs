//! What a session shows about its tables and itself: `DESCRIBE TABLE` (an Iceberg table or a
//! `system` table), `DESCRIBE (query)`, `SHOW SETTINGS`, `SHOW TABLES FROM system`, and the
//! routes of `SELECT` and `EXPLAIN SELECT`, which need the `datafusion` feature.

use super::newest::{Found, newest_metadata};
use super::*;
use crate::engine::describe;
use crate::sql::{DescribeTarget, Select};

/// The answer of a statement that needs the query engine, in a build without it.
#[cfg(not(feature = "datafusion"))]
fn query_engine_disabled(what: &str) -> Error {
    Error::new(
        ErrorKind::SupportIsDisabled,
        format!("{what} needs icetrim built with the feature `datafusion`"),
    )
}

impl Session {
    pub(super) async fn describe(&self, target: &DescribeTarget) -> Result<QueryResult> {
        let rows = match target {
            DescribeTarget::Query(text) => return self.describe_query(text).await,
            DescribeTarget::Table(name) if self.database_of(name) == "system" => {
                return self.describe_system_table(&name.table);
            }
            DescribeTarget::Table(name) => {
                let place = self.place_of(name).await?;
                let runtime = &self.shared.runtime;
                let found = match &place {
                    TablePlace::Path(def) => Found::Path(def),
                    TablePlace::Catalog(def) => Found::Catalog(def, self.catalogs.get(def)?),
                };
                let cancel = self.cancel.clone();
                let (located, _) =
                    newest_metadata(runtime, &self.settings, found, &name.table, cancel).await?;
                describe::table_rows(&located.metadata)?
            }
        };
        Ok(QueryResult::table(crate::format::describe_columns(), rows))
    }

    #[cfg(feature = "datafusion")]
    fn describe_system_table(&self, name: &str) -> Result<QueryResult> {
        let schema = match crate::inspect::MetadataTable::from_name(name) {
            Some(table) => table.schema(),
            None => crate::engine::maintain_log_tables::LogTable::from_name(name)
                .ok_or_else(|| unknown_system_table(name))?
                .schema(),
        };
        let rows = schema
            .fields()
            .iter()
            .map(|f| crate::format::describe_row(f.name(), crate::query::clickhouse_type(f)))
            .collect();
        Ok(QueryResult::table(crate::format::describe_columns(), rows))
    }

    #[cfg(not(feature = "datafusion"))]
    fn describe_system_table(&self, _name: &str) -> Result<QueryResult> {
        Err(query_engine_disabled("DESCRIBE TABLE system.<table>"))
    }

    #[cfg(feature = "datafusion")]
    async fn describe_query(&self, text: &str) -> Result<QueryResult> {
        let ctx = self.query_context().await?;
        let (columns, rows) = crate::query::describe_select(&ctx, text).await?;
        Ok(QueryResult::table(columns, rows))
    }

    #[cfg(not(feature = "datafusion"))]
    async fn describe_query(&self, _text: &str) -> Result<QueryResult> {
        Err(query_engine_disabled("DESCRIBE (SELECT ...)"))
    }

    pub(super) async fn select(&self, select: &Select) -> Result<QueryResult> {
        self.select_rows(select).await?.into_result().await
    }

    /// A `SELECT`'s rows, streamed as the plan produces them.
    #[cfg(feature = "datafusion")]
    pub(super) async fn select_rows(&self, select: &Select) -> Result<SelectRows> {
        let ctx = self.query_context().await?;
        let options = self.query_options();
        let (columns, chunks) = crate::query::select_stream(&ctx, &select.text, &options).await?;
        let format = select
            .format
            .as_deref()
            .map(OutputFormat::from_name)
            .transpose()?;
        if let Some(format) = format {
            format.check_columns(&columns)?;
        }
        Ok(SelectRows {
            columns,
            format,
            chunks,
        })
    }

    #[cfg(not(feature = "datafusion"))]
    pub(super) async fn select_rows(&self, _select: &Select) -> Result<SelectRows> {
        Err(query_engine_disabled("SELECT over the system tables"))
    }

    #[cfg(feature = "datafusion")]
    pub(super) async fn explain_select(&self, select: &Select) -> Result<QueryResult> {
        let ctx = self.query_context().await?;
        let (columns, rows) = crate::query::explain_select(&ctx, &select.text).await?;
        Ok(QueryResult::table(columns, rows))
    }

    #[cfg(not(feature = "datafusion"))]
    pub(super) async fn explain_select(&self, _select: &Select) -> Result<QueryResult> {
        Err(query_engine_disabled("EXPLAIN SELECT"))
    }

    /// The `system` tables by name (`SHOW TABLES FROM system`).
    pub(super) fn system_table_names() -> Vec<&'static str> {
        #[cfg(feature = "datafusion")]
        let mut names: Vec<&'static str> = crate::inspect::MetadataTable::ALL
            .iter()
            .map(|t| t.name())
            .chain(crate::engine::maintain_log_tables::LogTable::ALL.map(|t| t.name()))
            .collect();
        #[cfg(not(feature = "datafusion"))]
        let mut names: Vec<&'static str> = Vec::new();
        names.sort_unstable();
        names
    }

    /// `SHOW [CHANGED] SETTINGS [LIKE | ILIKE 'pattern']`: ClickHouse's `name`, `type`, `value`.
    pub(super) fn show_settings(
        &self,
        changed: bool,
        like: Option<&(String, bool)>,
    ) -> QueryResult {
        let rows = self
            .settings
            .definitions()
            .iter()
            .filter(|def| like.is_none_or(|(p, ci)| like_matches(p, def.name, *ci)))
            .filter_map(|def| {
                let value = self.settings.get_text(def.name).unwrap_or_default();
                let default = crate::settings::default_text(def);
                (!changed || value != default).then(|| {
                    vec![
                        Value::from(def.name),
                        Value::from(crate::settings::type_name(def.ty)),
                        Value::Str(value),
                    ]
                })
            })
            .collect();
        let columns = ["name", "type", "value"]
            .into_iter()
            .map(|n| Column::new(n, "String"))
            .collect();
        QueryResult::table(columns, rows)
    }
}

#[cfg(feature = "datafusion")]
fn unknown_system_table(name: &str) -> Error {
    Error::new(
        ErrorKind::UnknownTable,
        format!("Table system.{name} does not exist"),
    )
}

/// SQL `LIKE`: `%` any run, `_` one character, `\` escapes; `ignore_case` for `ILIKE`.
pub(crate) fn like_matches(pattern: &str, text: &str, ignore_case: bool) -> bool {
    let fold = |s: &str| -> Vec<char> {
        if ignore_case {
            s.to_lowercase().chars().collect()
        } else {
            s.chars().collect()
        }
    };
    let (p, t) = (fold(pattern), fold(text));
    // Iterative matching with one backtrack point for the last `%` (no recursion on input).
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('%') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some('\\') if p.get(pi + 1) == Some(&t[ti]) => {
                pi += 2;
                ti += 1;
            }
            Some(c) if *c == '_' || (*c != '\\' && *c == t[ti]) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '%')
}

#[cfg(test)]
mod tests {
    use super::like_matches;

    #[test]
    fn like_follows_sql() {
        assert!(like_matches("max_memory%", "max_memory_usage", false));
        assert!(like_matches("%usage", "max_memory_usage", false));
        assert!(like_matches("max_memory_usag_", "max_memory_usage", false));
        assert!(!like_matches("MAX%", "max_memory_usage", false));
        assert!(like_matches("MAX%", "max_memory_usage", true));
        assert!(like_matches("a\\_b", "a_b", false));
        assert!(!like_matches("a\\_b", "axb", false));
        assert!(like_matches("%", "", false));
        assert!(!like_matches("_", "", false));
        assert!(like_matches("%a%b%", "xxaxxbxx", false));
    }
}

//! A minimal host query engine that embeds icetrim: it parses statements with sqlparser itself,
//! routes Iceberg maintenance (`[EXPLAIN] ALTER TABLE … EXECUTE …`, and the `CREATE TABLE … ENGINE =
//! Iceberg…` that registers a table) to icetrim, and keeps everything else.
//!
//! ```text
//! cargo run --example embed -- "CREATE TABLE t ENGINE = IcebergLocal('/data/t'); SELECT 1; \
//!     ALTER TABLE t EXECUTE expire_snapshots(dry_run = 1)"
//! ```

use icetrim::engine::{Engine, Session, handles};
use icetrim::format::OutputFormat;
use sqlparser::dialect::ClickHouseDialect;
use sqlparser::parser::Parser;

/// What the host did with one statement.
#[derive(Debug, PartialEq)]
pub enum Routed {
    /// icetrim ran it; its rows as TabSeparated.
    Icetrim(String),
    /// The host's own engine would run it (here: it only names the parsed statement).
    Host(String),
}

/// Whether icetrim should register this statement's table: a `CREATE TABLE` on an Iceberg engine.
fn registers_iceberg_table(sql: &str) -> bool {
    let upper = sql.to_ascii_uppercase();
    upper.trim_start().starts_with("CREATE TABLE")
        && upper.contains("ENGINE")
        && upper.contains("ICEBERG")
}

/// Run one statement the way the host routes it.
pub async fn route(session: &mut Session, sql: &str) -> Result<Routed, String> {
    if handles(sql) || registers_iceberg_table(sql) {
        let results = session.execute(sql).await.map_err(|e| e.to_string())?;
        let text = results
            .iter()
            .map(|r| OutputFormat::TabSeparated.render(&r.columns, &r.rows, 0.0))
            .collect::<String>();
        return Ok(Routed::Icetrim(text));
    }
    let statements = Parser::parse_sql(&ClickHouseDialect {}, sql).map_err(|e| e.to_string())?;
    let kinds: Vec<String> = statements
        .iter()
        .map(|s| {
            s.to_string()
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    Ok(Routed::Host(format!("host runs {}", kinds.join(", "))))
}

/// Run a script of `;`-separated statements.
pub async fn run_script(script: &str) -> Result<Vec<Routed>, String> {
    let engine = Engine::builder().build().map_err(|e| e.to_string())?;
    let mut session = engine.session();
    let mut out = Vec::new();
    for (sql, _line) in icetrim::engine::split_statements(script) {
        out.push(route(&mut session, sql).await?);
    }
    Ok(out)
}

#[allow(dead_code)]
#[tokio::main(flavor = "current_thread")]
async fn main() {
    let script = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "SELECT 1".to_string());
    match run_script(&script).await {
        Ok(routed) => {
            for r in routed {
                match r {
                    Routed::Icetrim(rows) => print!("{rows}"),
                    Routed::Host(note) => println!("{note}"),
                }
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

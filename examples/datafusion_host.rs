//! A query engine built on Apache DataFusion, with icetrim installed in its `SessionContext`: one
//! script mixes the host's own SQL over a Parquet file this example writes (which team owns which
//! table) with icetrim's statements (register an Iceberg table, plan an expiry), then joins
//! icetrim's metadata table `icetrim.system.iceberg_snapshots` with the host's data. The host
//! authenticates its users itself and decides who may do what: icetrim asks its `Authorizer`
//! (here: `ops` may do anything, everyone else only read) for the principal of the session the
//! host installed.
//!
//! ```text
//! cargo run --example datafusion_host [-- DIR]
//! ```
//!
//! The Parquet file is read into Arrow with the `parquet` crate and registered as a `MemTable`:
//! icetrim builds DataFusion without its file readers. A host that enables
//! DataFusion's `parquet` feature registers it with `ctx.register_parquet` instead.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use icetrim::Table;
use icetrim::datafusion::arrow::array::{RecordBatch, StringArray};
use icetrim::datafusion::arrow::datatypes::{DataType, Field, Schema};
use icetrim::datafusion::arrow::util::pretty::pretty_format_batches;
use icetrim::datafusion::catalog::MemTable;
use icetrim::datafusion::prelude::SessionContext;
use icetrim::engine::{Authorizer, Engine, GrantObject, Privilege, split_statements};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// The mixed script: icetrim's statements and the host's DataFusion SQL.
const SCRIPT: &str = include_str!("../sql-examples/datafusion_host.sql");

/// The host's access rules: `ops` may do anything; every other user may read (`SELECT` and
/// seeing names), never change a table.
#[derive(Debug)]
pub struct TeamRules;

impl Authorizer for TeamRules {
    fn allows(&self, user: &str, privilege: Privilege, _object: &GrantObject) -> bool {
        user == "ops"
            || matches!(
                privilege,
                Privilege::Select | Privilege::ShowTables | Privilege::ShowColumns
            )
    }
}

/// The host's context with icetrim installed for the authenticated `user`, and the host's
/// `owners` table (from the Parquet file at `owners`).
pub async fn host_for(
    user: &str,
    owners: &Path,
) -> Result<SessionContext, Box<dyn std::error::Error>> {
    let ctx = SessionContext::new();
    let rows = read_parquet(owners)?;
    let schema = rows
        .first()
        .map(RecordBatch::schema)
        .ok_or("an empty Parquet file")?;
    ctx.register_table("owners", Arc::new(MemTable::try_new(schema, vec![rows])?))?;
    let engine = Engine::builder().authorizer(Arc::new(TeamRules)).build()?;
    let mut session = engine.session();
    session.set_user(user)?;
    icetrim::host::install_session(&ctx, &engine, session)?;
    Ok(ctx)
}

/// One statement of the script and the rows it returned.
pub struct Answer {
    pub statement: String,
    pub batches: Vec<RecordBatch>,
}

/// The host's data: the owner team of each table, written as Parquet at `path`.
fn write_owners(path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("table_name", DataType::Utf8, false),
        Field::new("team", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from(vec!["events", "clicks", "orders"])),
            Arc::new(StringArray::from(vec!["analytics", "analytics", "sales"])),
        ],
    )?;
    let mut writer = ArrowWriter::try_new(File::create(path)?, schema, None)?;
    writer.write(&batch)?;
    writer.close()?;
    Ok(())
}

/// Every row of the Parquet file at `path`.
fn read_parquet(path: &Path) -> Result<Vec<RecordBatch>, Box<dyn std::error::Error>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?.build()?;
    Ok(reader.collect::<Result<Vec<_>, _>>()?)
}

/// Builds the host in `dir` and runs the mixed script; each statement's rows.
pub async fn run(dir: &Path) -> Result<Vec<Answer>, Box<dyn std::error::Error>> {
    let owners = dir.join("owners.parquet");
    write_owners(&owners)?;
    let events = dir.join("events").to_string_lossy().into_owned();
    Table::write_demo(&events).await?;

    let ctx = host_for("ops", &owners).await?;

    // The script is `sql-examples/datafusion_host.sql`, on this run's table.
    let script = SCRIPT.replace("/tmp/icetrim-example/events", &events);
    let statements: Vec<String> = split_statements(&script)
        .into_iter()
        .map(|(text, _line)| text.to_string())
        .collect();
    let frames = icetrim::host::sql(&ctx, &script).await?;
    let mut answers = Vec::new();
    for (statement, frame) in statements.into_iter().zip(frames) {
        let batches = frame.collect().await.map_err(icetrim::host::error)?;
        answers.push(Answer { statement, batches });
    }
    Ok(answers)
}

#[allow(dead_code)]
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = match std::env::args().nth(1) {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::env::temp_dir().join(format!("icetrim-host-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    for answer in run(&dir).await? {
        println!("{};", answer.statement);
        if answer.batches.iter().any(|b| b.num_columns() > 0) {
            println!("{}", pretty_format_batches(&answer.batches)?);
        }
        println!();
    }
    Ok(())
}

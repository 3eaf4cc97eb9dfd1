//! The benchmark's results and their Markdown table (pasted into README.md's Benchmarks section).

use crate::inproc::{Floor, S3Run};
use crate::measure::mb;
use icetrim::internals::io::RequestCounts;

/// One ClickHouse measurement.
pub struct ChTime {
    pub seconds: f64,
    pub timed_out: bool,
    pub max_rss: u64,
}

/// One line of the main table.
pub struct Line {
    pub scenario: String,
    pub table: String,
    pub icetrim_seconds: f64,
    pub icetrim_rss: u64,
    pub clickhouse: Option<ChTime>,
    /// Whether both tools answered the same rows (None: ClickHouse did not run or finish).
    pub same_rows: Option<bool>,
    pub floor: Option<Floor>,
}

#[derive(Default)]
pub struct Report {
    pub lines: Vec<Line>,
    pub s3: Vec<S3Run>,
    /// Scenarios 6 and 7: runs over simulated latency.
    pub latency: Vec<crate::latency::LatencyRun>,
    /// Scenario 8: a catalog's tables maintained by one statement and one statement at a time.
    pub fleet: Vec<crate::fleet::FleetRun>,
    pub notes: Vec<String>,
}

fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else {
        format!("{s:.2} s")
    }
}

impl Line {
    fn cells(&self) -> String {
        let (ch, ch_rss, ratio) = match &self.clickhouse {
            Some(c) => {
                let bound = if c.timed_out { "> " } else { "" };
                (
                    format!("{bound}{}", secs(c.seconds)),
                    format!("{:.0} MB", mb(c.max_rss)),
                    format!("{bound}{:.1}×", c.seconds / self.icetrim_seconds),
                )
            }
            None => ("—".into(), "—".into(), "—".into()),
        };
        let same = match self.same_rows {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "—",
        };
        format!(
            "| {} | {} | {} | {:.0} MB | {ch} | {ch_rss} | {ratio} | {same} |",
            self.scenario,
            self.table,
            secs(self.icetrim_seconds),
            mb(self.icetrim_rss)
        )
    }
}

impl Report {
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "| scenario | table | icetrim | icetrim peak RSS | ClickHouse | ClickHouse peak RSS (process) | ClickHouse / icetrim | same rows |\n\
             |---|---|---|---|---|---|---|---|\n",
        );
        for line in &self.lines {
            out.push_str(&line.cells());
            out.push('\n');
        }
        for line in &self.lines {
            if let Some(f) = &line.floor {
                out.push_str(&format!(
                    "\nFloor of \"{}\": reading the {} files the expiry must read ({:.1} MB) takes {} \
                     (best of 3, warm cache, 32 reads in flight); reading and decoding them (JSON \
                     parse, inflate, projected Avro decode) takes {}. icetrim (whole process) takes \
                     {:.1}× the read floor and {:.1}× the decode floor. Reading every file under \
                     `metadata/` once ({} files) takes {}: icetrim takes {:.2}× that.\n",
                    line.scenario,
                    f.files,
                    mb(f.bytes),
                    secs(f.seconds),
                    secs(f.decode_seconds),
                    line.icetrim_seconds / f.seconds,
                    line.icetrim_seconds / f.decode_seconds,
                    f.metadata_files,
                    secs(f.metadata_seconds),
                    line.icetrim_seconds / f.metadata_seconds
                ));
            }
        }
        if !self.s3.is_empty() {
            out.push_str(
                "\nS3 emulator (moto), requests of one expiry (icetrim's counted by its request-counting \
                 layer, ClickHouse's by a counting proxy in front of the emulator; each tool on its own \
                 copy of the same table):\n\n\
                 | snapshots | manifests | tool | expiry time | GET | HEAD | PUT | LIST | DELETE requests | keys deleted |\n\
                 |---|---|---|---|---|---|---|---|---|---|\n",
            );
            for r in &self.s3 {
                let mut row = |tool: &str, seconds: f64, q: &RequestCounts| {
                    out.push_str(&format!(
                        "| {} | {} | {tool} | {} | {} | {} | {} | {} | {} | {} |\n",
                        r.snapshots,
                        r.manifests,
                        secs(seconds),
                        q.get,
                        q.head,
                        q.put,
                        q.list,
                        q.delete,
                        q.deleted_keys
                    ));
                };
                row("icetrim", r.seconds, &r.requests);
                if let Some(c) = &r.clickhouse {
                    row("ClickHouse", c.seconds, &c.requests);
                }
            }
        }
        if !self.latency.is_empty() {
            out.push_str(
                "\nOver simulated latency (30 ms to the first byte, 100 MB/s a stream, 1 GB/s in \
                 all, 1000 objects a listing page), dry runs; floor = ⌈R ÷ N⌉ × 30 ms + B ÷ \
                 min(N × 100 MB/s, 1 GB/s):\n\n",
            );
            out.push_str(crate::latency::HEADER);
            out.push('\n');
            for run in &self.latency {
                out.push_str(&run.line());
                out.push('\n');
            }
        }
        if !self.fleet.is_empty() {
            out.push_str(
                "\nA catalog's tables (test REST catalog, S3 emulator behind the same simulated \
                 latency): `SYSTEM MAINTAIN DATABASE` against the same procedures one `ALTER TABLE \
                 … EXECUTE` at a time on an identical copy:\n\n",
            );
            out.push_str(crate::fleet::HEADER);
            out.push('\n');
            for run in &self.fleet {
                out.push_str(&run.line());
                out.push('\n');
            }
        }
        for note in &self.notes {
            out.push_str(&format!("\n- {note}"));
        }
        out.push('\n');
        out
    }
}

//! The five scenarios: build the tables, run both tools, collect the report lines.

use std::path::{Path, PathBuf};

use icetrim::internals::generate::{GenerateOptions, Mix};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::plan::ExpireOptions;

use crate::Args;
use crate::inproc;
use crate::latency;
use crate::measure::{Measured, mb};
use crate::report::{ChTime, Line, Report};
use crate::tools::{ChRun, Rows, Tools};

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;
const SEED: &str = "7";

/// Shared state of one benchmark run.
struct Bench<'a> {
    args: &'a Args,
    tools: Tools,
    /// The generator's "now" (whole seconds): histories end just before it.
    now_ms: i64,
    report: Report,
}

fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

pub fn run_all(args: &Args) -> Result<Report, String> {
    let scratch = args.dir.join("scratch");
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let now_ms = chrono::Utc::now().timestamp() * 1000;
    let mut bench = Bench {
        args,
        tools: Tools::new(args.ch_timeout, scratch),
        now_ms,
        report: Report::default(),
    };
    let wanted = |n: u32| args.only.as_ref().is_none_or(|o| o.contains(&n));
    if wanted(1) {
        bench.fast_appends()?;
    }
    if wanted(2) {
        bench.mixed_vs_clickhouse()?;
    }
    if wanted(3) {
        bench.mixed_large()?;
    }
    if wanted(4) {
        bench.orphans(if args.quick { 1_000 } else { 9_000 })?;
        if args.large_orphans {
            bench.orphans(if args.quick { 10_000 } else { 90_000 })?;
        }
    }
    if wanted(5) {
        bench.s3()?;
    }
    if wanted(6) {
        bench.latency_expiry()?;
    }
    if wanted(7) {
        bench.latency_orphans()?;
    }
    if wanted(8) {
        bench.fleet()?;
    }
    Ok(bench.report)
}

impl Bench<'_> {
    fn size(&self, full: usize, quick: usize) -> usize {
        if self.args.quick { quick } else { full }
    }

    /// `expire_snapshots` arguments expiring every snapshot older than a day before generation
    /// (the fuse makes the answer independent of when each tool runs).
    fn expire_args(&self) -> String {
        format!(
            "expire_before = '{}', retention_period = '1d'",
            utc(self.now_ms - DAY_MS)
        )
    }

    fn expire_options(&self) -> ExpireOptions {
        ExpireOptions {
            expire_before_ms: Some(self.now_ms - DAY_MS),
            retention_period_ms: Some(DAY_MS),
            ..Default::default()
        }
    }

    fn gen_args(&self, snapshots: usize, files: usize, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [
            "--format-version",
            "2",
            "--seed",
            SEED,
            "--span",
            "30d",
            "--now",
            &utc(self.now_ms),
            "--snapshots",
            &snapshots.to_string(),
            "--files-per-snapshot",
            &files.to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    /// Generate a fresh table `name` (removed first if left over); prints what was built.
    fn generate(&self, name: &str, args: &[String]) -> Result<(PathBuf, Measured), String> {
        let dir = self.args.dir.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let (m, summary) = self.tools.generate(&dir, args)?;
        eprintln!(
            "  generated {name}: {} snapshots, {} data files, {} manifests in {:.1} s, peak {:.0} MB",
            summary["snapshots"],
            summary["data_files_added"],
            summary["manifests_written"],
            m.seconds,
            mb(m.max_rss)
        );
        Ok((dir, m))
    }

    fn cleanup(&self, dirs: &[&Path]) {
        if !self.args.keep {
            for d in dirs {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }

    /// Both tools on their own copy of the same table, `runs` times (a fresh pair of tables each
    /// run); one report line with each tool's median run.
    #[allow(clippy::too_many_arguments)]
    fn versus(
        &mut self,
        scenario: &str,
        table: &str,
        name: &str,
        gen_args: &[String],
        sql: &str,
        floor: bool,
        runs: usize,
    ) -> Result<(), String> {
        eprintln!("{scenario}: {table}");
        let mut ours_runs = Vec::new();
        let mut theirs_runs = Vec::new();
        let mut table = table.to_string();
        let mut floor_line = None;
        for run in 0..runs.max(1) {
            let (ours, _) = self.generate(&format!("{name}-icetrim"), gen_args)?;
            let (theirs, _) = self.generate(&format!("{name}-clickhouse"), gen_args)?;
            if run == 0 {
                table = table.replace("{files}", &count_files(&ours).to_string());
                if floor {
                    floor_line = Some(inproc::floor_in_child(
                        &ours.to_string_lossy(),
                        &self.expire_options(),
                        self.now_ms,
                    )?);
                }
            }
            // Both tools start from a warm page cache (as the floor does): this VM's page cache
            // is reclaimed proactively, and a cold read of a thousand files costs more than the
            // expiry's own work.
            warm(&ours);
            let (m, rows) = self.tools.icetrim(&ours, sql)?;
            eprintln!(
                "  icetrim: {:.3} s, peak {:.0} MB, {rows:?}",
                m.seconds,
                mb(m.max_rss)
            );
            warm(&theirs);
            let ch = self.tools.clickhouse(&theirs, sql)?;
            eprintln!(
                "  ClickHouse: {}{:.3} s, process peak {:.0} MB, {:?}",
                if ch.timed_out { "> " } else { "" },
                ch.seconds,
                mb(ch.process.max_rss),
                ch.rows
            );
            self.cleanup(&[&ours, &theirs]);
            let timed_out = ch.timed_out;
            ours_runs.push((m, rows));
            theirs_runs.push(ch);
            if timed_out {
                break;
            }
        }
        let (m, rows) = median_by(ours_runs, |(m, _)| m.seconds);
        let ch = median_by(theirs_runs, |c| c.seconds);
        let same_rows = (!ch.timed_out).then(|| same(&rows, &ch));
        if same_rows == Some(false) {
            self.report.notes.push(format!(
                "{scenario}: rows differ: icetrim {rows:?}, ClickHouse {:?}",
                ch.rows
            ));
        }
        self.report.lines.push(Line {
            scenario: scenario.into(),
            table,
            icetrim_seconds: m.seconds,
            icetrim_rss: m.max_rss,
            clickhouse: Some(ChTime {
                seconds: ch.seconds,
                timed_out: ch.timed_out,
                max_rss: ch.process.max_rss,
            }),
            same_rows,
            floor: floor_line,
        });
        Ok(())
    }

    fn fast_appends(&mut self) -> Result<(), String> {
        let n = self.size(1_000, 200);
        let gen_args = self.gen_args(n, 1, &["--mix", "append=1", "--max-manifests", "1000000"]);
        let sql = format!(
            "ALTER TABLE t EXECUTE expire_snapshots({})",
            self.expire_args()
        );
        let table = format!("{n} fast appends, lists grow to {n} manifests");
        self.versus(
            "1. expire, fast appends",
            &table,
            "fast",
            &gen_args,
            &sql,
            true,
            self.size(3, 1),
        )
    }

    fn mixed_vs_clickhouse(&mut self) -> Result<(), String> {
        let n = self.size(10_000, 1_000);
        let gen_args = self.gen_args(n, 10, &["--branches", "4", "--tags", "10"]);
        let sql = format!(
            "ALTER TABLE t EXECUTE expire_snapshots({})",
            self.expire_args()
        );
        let table = format!("{n} snapshots, mixed history ×10 files, 4 branches, 10 tags");
        self.versus(
            "2. expire, mixed history",
            &table,
            "mixed",
            &gen_args,
            &sql,
            false,
            1,
        )
    }

    fn mixed_large(&mut self) -> Result<(), String> {
        let n = self.size(100_000, 10_000);
        eprintln!("3. expire, large mixed history: {n} snapshots");
        let gen_args = self.gen_args(
            n,
            10,
            &["--branches", "4", "--tags", "10", "--no-data-files"],
        );
        let (dir, g) = self.generate("large", &gen_args)?;
        self.report.notes.push(format!(
            "3. the generator built the {n}-snapshot table in {:.1} s, peak {:.0} MB",
            g.seconds,
            mb(g.max_rss)
        ));
        let args = self.expire_args();
        // The floor of the dry run (what the expiry must read, read and decoded alone), which
        // also leaves the table in the page cache for both runs.
        let floor =
            inproc::floor_in_child(&dir.to_string_lossy(), &self.expire_options(), self.now_ms)?;
        self.all_files_to_tsv(&dir, n)?;
        let mut floor = Some(floor);
        for (label, sql) in [
            (
                "3. expire, large history (dry run)",
                format!("ALTER TABLE t EXECUTE expire_snapshots({args}, dry_run = 1)"),
            ),
            (
                "3. expire, large history",
                format!("ALTER TABLE t EXECUTE expire_snapshots({args})"),
            ),
        ] {
            let (m, rows) = self.tools.icetrim(&dir, &sql)?;
            eprintln!(
                "  {label}: {:.3} s, peak {:.0} MB, {rows:?}",
                m.seconds,
                mb(m.max_rss)
            );
            self.report.lines.push(Line {
                scenario: label.into(),
                table: format!(
                    "{n} snapshots × 10 files per commit (data files not written), 4 branches, 10 tags"
                ),
                icetrim_seconds: m.seconds,
                icetrim_rss: m.max_rss,
                clickhouse: None,
                same_rows: None,
                floor: floor.take(),
            });
        }
        self.cleanup(&[&dir]);
        Ok(())
    }

    /// Every row of `system.iceberg_all_files` of scenario 3's table, streamed to TSV: time, rows
    /// a second and peak memory (the rows are counted, not kept).
    fn all_files_to_tsv(&mut self, dir: &Path, n: usize) -> Result<(), String> {
        let sql = "SELECT * FROM system.iceberg_all_files WHERE table = 't' FORMAT TSV";
        let (m, _) = self.tools.icetrim(dir, sql)?;
        let label = "3. SELECT * FROM system.iceberg_all_files, to TSV";
        eprintln!(
            "  {label}: {} rows, {:.0} MB of TSV, {:.3} s ({:.0} rows/s), peak {:.0} MB",
            m.stdout_lines,
            mb(m.stdout_bytes),
            m.seconds,
            m.stdout_lines as f64 / m.seconds.max(1e-9),
            mb(m.max_rss)
        );
        self.report.notes.push(format!(
            "3. all_files to TSV: {} rows ({:.0} MB) in {:.1} s, {:.0} rows/s, peak {:.0} MB",
            m.stdout_lines,
            mb(m.stdout_bytes),
            m.seconds,
            m.stdout_lines as f64 / m.seconds.max(1e-9),
            mb(m.max_rss)
        ));
        self.report.lines.push(Line {
            scenario: label.into(),
            table: format!(
                "{n} snapshots × 10 files per commit, {} rows",
                m.stdout_lines
            ),
            icetrim_seconds: m.seconds,
            icetrim_rss: m.max_rss,
            clickhouse: None,
            same_rows: None,
            floor: None,
        });
        Ok(())
    }

    fn orphans(&mut self, snapshots: usize) -> Result<(), String> {
        let orphans = snapshots + snapshots / 9;
        let gen_args = self.gen_args(snapshots, 10, &["--orphans", &orphans.to_string()]);
        let sql = format!(
            "ALTER TABLE t EXECUTE remove_orphan_files(older_than = '{}')",
            utc(self.now_ms - HOUR_MS)
        );
        let name = format!("orphans{snapshots}");
        let table = format!("{{files}} files, {orphans} orphans");
        self.versus(
            "4. remove_orphan_files",
            &table,
            &name,
            &gen_args,
            &sql,
            false,
            1,
        )
    }

    fn s3(&mut self) -> Result<(), String> {
        let Some((endpoint, bucket)) = inproc::s3_emulator() else {
            self.report.notes.push(
                "5. skipped: the S3 emulator is not running (scripts/emulators.sh start; \
                 set -a; source target/emulators.env; set +a)"
                    .into(),
            );
            return Ok(());
        };
        for n in [self.size(200, 50), self.size(2_000, 200)] {
            let mut opts = GenerateOptions::new("", FormatVersion::V2, n, 5, 7, self.now_ms);
            opts.mix = Mix::default();
            opts.branches = 2;
            opts.tags = 3;
            opts.write_data_files = false;
            eprintln!("5. S3 emulator: {n} snapshots");
            let mut run = inproc::s3_expiry(&endpoint, &bucket, opts, &self.expire_options())?;
            eprintln!(
                "  generated in {:.1} s; expiry {:.3} s: {}; {:?}",
                run.generate_seconds, run.seconds, run.requests, run.rows
            );
            let sql = format!(
                "ALTER TABLE t EXECUTE expire_snapshots({})",
                self.expire_args()
            );
            let theirs =
                self.tools
                    .clickhouse_s3(&endpoint, &bucket, &run.clickhouse_prefix, &sql)?;
            eprintln!(
                "  ClickHouse: {:.3} s: {}; {:?}",
                theirs.seconds, theirs.requests, theirs.rows
            );
            if theirs.rows != run.rows {
                self.report.notes.push(format!(
                    "5. {n} snapshots: the rows differ: icetrim {:?}, ClickHouse {:?}",
                    run.rows, theirs.rows
                ));
            }
            run.clickhouse = Some(theirs);
            self.report.s3.push(run);
        }
        Ok(())
    }
}

impl Bench<'_> {
    /// Read concurrencies each latency scenario runs with (the default among them).
    const LATENCY_CONCURRENCY: [usize; 4] = [16, 32, 64, 128];

    fn latency_expiry(&mut self) -> Result<(), String> {
        let n = self.size(10_000, 1_000);
        eprintln!("6. expire over 30 ms simulated latency: {n} snapshots, mixed history");
        let runs = latency::run(
            &format!("6. expire (dry run), {n} mixed snapshots, 30 ms"),
            latency::mixed(n, self.now_ms),
            Some(self.expire_options()),
            &Self::LATENCY_CONCURRENCY,
        )?;
        self.report.latency.extend(runs);
        Ok(())
    }

    fn fleet(&mut self) -> Result<(), String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        let sizes = match &self.args.fleet_sizes {
            Some(sizes) => sizes.clone(),
            None => vec![self.size(50, 10), self.size(500, 50)],
        };
        for n in sizes {
            eprintln!("8. SYSTEM MAINTAIN DATABASE over {n} tables, 30 ms simulated latency");
            match rt.block_on(crate::fleet::run(n, self.now_ms))? {
                Some(run) => {
                    eprintln!("  {}", run.line());
                    self.report.fleet.push(run);
                }
                None => {
                    self.report.notes.push(
                        "8. skipped: the emulators and the test REST catalog are not running \
                         (scripts/emulators.sh start; set -a; source target/emulators.env; set +a)"
                            .into(),
                    );
                    break;
                }
            }
        }
        Ok(())
    }

    fn latency_orphans(&mut self) -> Result<(), String> {
        let n = self.size(9_000, 900);
        eprintln!("7. remove_orphan_files over 30 ms simulated latency: {n} snapshots");
        let runs = latency::run(
            &format!(
                "7. remove_orphan_files (dry run), {n} snapshots × 10 files + 10% orphans, 30 ms"
            ),
            latency::orphans(n, self.now_ms),
            None,
            &Self::LATENCY_CONCURRENCY,
        )?;
        self.report.latency.extend(runs);
        Ok(())
    }
}

/// The median item by `key` (the upper one of an even count); `items` must not be empty.
fn median_by<T>(mut items: Vec<T>, key: impl Fn(&T) -> f64) -> T {
    items.sort_by(|a, b| key(a).total_cmp(&key(b)));
    let mid = items.len() / 2;
    items.swap_remove(mid)
}

fn same(ours: &Rows, theirs: &ChRun) -> bool {
    *ours == theirs.rows
}

/// Read every file under `dir` once, so the run that follows finds them in the page cache.
fn warm(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => {
                    let _ = std::fs::read(e.path());
                }
                Err(_) => {}
            }
        }
    }
}

fn count_files(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => n += 1,
                Err(_) => {}
            }
        }
    }
    n
}

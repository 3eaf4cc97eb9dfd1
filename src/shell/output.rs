//! Writing results and errors: standard output through a handle whose broken pipe ends the
//! program quietly, errors on standard error (red on a colour terminal unless `NO_COLOR`). A
//! progress bar, when one is attached, is cleared before anything is written. Pretty results fall
//! back to Vertical by the session's `output_format_pretty_fallback_to_vertical*` settings and
//! show paths relative to their location, printed once above them
//! ([`crate::format::relative_to_location`] has the rule).

use std::borrow::Cow;
use std::io::{self, IsTerminal, Write};
use std::sync::Arc;

use super::progress_bar::ProgressBar;

use tokio::runtime::Runtime;

use crate::engine::{QueryResult, SelectRows};
use crate::error::Error;
use crate::format::{OutputFormat, VerticalFallback, relative_to_location};
use crate::settings::Settings;

/// The Vertical fallback the session's settings ask for.
pub fn layout(settings: &Settings) -> VerticalFallback {
    VerticalFallback {
        enabled: settings.get_bool("output_format_pretty_fallback_to_vertical"),
        max_rows: settings.get_uint("output_format_pretty_fallback_to_vertical_max_rows_per_chunk"),
        min_columns: settings.get_uint("output_format_pretty_fallback_to_vertical_min_columns"),
        min_table_width: settings
            .get_uint("output_format_pretty_fallback_to_vertical_min_table_width"),
    }
}

/// Why output stopped.
#[derive(Debug)]
pub enum OutputError {
    /// The reader went away (`| head`): a clean exit.
    BrokenPipe,
    /// Any other write failure.
    Io(io::Error),
}

impl From<io::Error> for OutputError {
    fn from(error: io::Error) -> Self {
        if error.kind() == io::ErrorKind::BrokenPipe {
            OutputError::BrokenPipe
        } else {
            OutputError::Io(error)
        }
    }
}

/// Standard output and error of the shell.
#[derive(Debug)]
pub struct Output {
    color_errors: bool,
    progress: Option<Arc<ProgressBar>>,
}

impl Output {
    /// Output on the process's standard streams; errors coloured when standard error is a terminal
    /// and `NO_COLOR` is unset or empty.
    pub fn new() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Output {
            color_errors: io::stderr().is_terminal() && !no_color,
            progress: None,
        }
    }

    /// Clear `bar` before every write.
    pub fn attach_progress(&mut self, bar: Arc<ProgressBar>) {
        self.progress = Some(bar);
    }

    /// Removes the progress line, if one is drawn.
    pub fn clear_progress(&self) {
        if let Some(bar) = &self.progress {
            bar.clear();
        }
    }

    /// Writes `text` to standard output and flushes it.
    pub fn print(&mut self, text: &str) -> Result<(), OutputError> {
        self.clear_progress();
        let mut out = io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
        Ok(())
    }

    /// Writes a result in `format` (nothing for a statement without a result set); a Pretty
    /// format as Vertical when `fallback` applies, with paths relative to their location.
    pub fn print_result(
        &mut self,
        result: &QueryResult,
        format: OutputFormat,
        elapsed_seconds: f64,
        fallback: VerticalFallback,
    ) -> Result<(), OutputError> {
        for warning in &result.warnings {
            self.note(&format!("Warning: {warning}"));
        }
        // ClickHouse prints no frame at all for an empty result in the Pretty formats (observed
        // through chdb); the renderer draws an empty frame, so it is skipped here.
        let pretty = matches!(format, OutputFormat::Pretty | OutputFormat::PrettyCompact);
        if result.is_empty_set() || (pretty && result.rows.is_empty()) {
            return Ok(());
        }
        if !pretty {
            return self.print(&format.render(&result.columns, &result.rows, elapsed_seconds));
        }
        let (location, rows) =
            match relative_to_location(&result.columns, &result.rows, result.location.as_deref()) {
                Some((location, rows)) => (Some(location), Cow::Owned(rows)),
                None => (None, Cow::Borrowed(result.rows.as_slice())),
            };
        let format = if fallback.applies(&result.columns, &rows) {
            OutputFormat::Vertical
        } else {
            format
        };
        let mut text = String::new();
        if let Some(location) = location {
            text.push_str(&format!("Paths relative to {location}\n"));
        }
        text.push_str(&format.render(&result.columns, &rows, elapsed_seconds));
        self.print(&text)
    }

    /// Whether `format` prints row by row, so that a `SELECT` can be printed as it streams.
    pub fn streams(&self, format: OutputFormat) -> bool {
        matches!(
            format,
            OutputFormat::TabSeparated
                | OutputFormat::TabSeparatedWithNames
                | OutputFormat::Csv
                | OutputFormat::CsvWithNames
                | OutputFormat::JsonEachRow
        )
    }

    /// Prints a `SELECT`'s rows in `format` (one of [`Output::streams`]) a chunk at a time, the
    /// header once; an error while reading ends the rows printed so far.
    pub fn stream_rows(
        &mut self,
        runtime: &Runtime,
        mut rows: SelectRows,
        format: OutputFormat,
    ) -> Result<crate::error::Result<()>, OutputError> {
        let (header, body) = match format {
            OutputFormat::TabSeparatedWithNames => (Some(format), OutputFormat::TabSeparated),
            OutputFormat::CsvWithNames => (Some(format), OutputFormat::Csv),
            _ => (None, format),
        };
        if let Some(header) = header {
            self.print(&header.render(&rows.columns, &[], 0.0))?;
        }
        while let Some(chunk) = runtime.block_on(rows.next_chunk()) {
            match chunk {
                Ok(chunk) => self.print(&body.render(&rows.columns, &chunk, 0.0))?,
                Err(error) => return Ok(Err(error)),
            }
        }
        Ok(Ok(()))
    }

    /// Writes an error as ClickHouse does: `Code: N. DB::Exception: …. (NAME)`.
    pub fn error(&mut self, error: &Error) {
        if self.color_errors {
            self.note(&format!("\x1b[31m{error}\x1b[0m"));
        } else {
            self.note(&error.to_string());
        }
    }

    /// Writes a line to standard error; failures to do so are ignored (there is nowhere to report
    /// them).
    pub fn note(&mut self, line: &str) {
        self.clear_progress();
        let mut err = io::stderr().lock();
        let _ = writeln!(err, "{line}");
        let _ = err.flush();
    }
}

impl Default for Output {
    fn default() -> Self {
        Output::new()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn attaching_a_progress_bar_then_clearing_it() {
        use crate::shell::output::Output;
        use crate::shell::progress_bar::ProgressBar;
        let mut out = Output::new();
        out.attach_progress(ProgressBar::new());
        out.clear_progress();
    }
}

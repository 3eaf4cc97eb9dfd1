//! Pretty formats show file paths relative to the table location, printed once above the table
//! (TSV, JSON and the other formats keep full paths and URIs, for scripts).
//!
//! A *path* is a value of a column named `path`, `id`, `file_path`, `manifest_list`,
//! `metadata_file` or `location` (the columns of EXPLAIN and of the `system.iceberg_*` tables
//! that name files) that is an absolute path (`/…`) or a URI (`scheme://…`); other values of
//! those columns (snapshot ids, metric names) stay as they are. The location is the table's,
//! when the result names it (a procedure's result, `QueryResult::location`) and at least one
//! path lies under it: paths under it are shown as the rest after it, others in full. Without it
//! (a `SELECT` over several tables), with at least two paths, their longest common prefix that
//! ends with `/` is the location, if it holds more than the root (`/`, or `scheme://`).

use super::value::{Column, Value};

const PATH_COLUMNS: &[&str] = &[
    "path",
    "id",
    "file_path",
    "manifest_list",
    "metadata_file",
    "location",
];

/// The rows with their paths relative to the location, and the location; `None` when the rule
/// finds no location.
pub fn relative_to_location(
    columns: &[Column],
    rows: &[Vec<Value>],
    table_location: Option<&str>,
) -> Option<(String, Vec<Vec<Value>>)> {
    let path_columns: Vec<usize> = columns
        .iter()
        .enumerate()
        .filter(|(_, c)| PATH_COLUMNS.contains(&c.name.as_str()))
        .map(|(i, _)| i)
        .collect();
    let paths: Vec<&str> = rows
        .iter()
        .flat_map(|row| path_columns.iter().filter_map(|i| path_cell(row, *i)))
        .collect();
    let location = match table_location {
        Some(table) => {
            let folder = format!("{}/", table.trim_end_matches('/'));
            let under = paths.iter().any(|p| p.starts_with(&folder));
            (under && root_length(&folder).is_some_and(|r| folder.len() > r)).then_some(folder)?
        }
        None if paths.len() < 2 => return None,
        None => common_folder(&paths)?,
    };
    let rows = rows
        .iter()
        .map(|row| {
            let mut row = row.clone();
            for i in &path_columns {
                if let Some(Value::Str(text)) = row.get_mut(*i)
                    && let Some(rest) = text.strip_prefix(location.as_str())
                    && root_length(text).is_some()
                {
                    *text = if rest.is_empty() { "./" } else { rest }.to_string();
                }
            }
            row
        })
        .collect();
    Some((location, rows))
}

/// Value `i` of `row`, when it is a path.
fn path_cell(row: &[Value], i: usize) -> Option<&str> {
    match row.get(i) {
        Some(Value::Str(text)) => root_length(text).map(|_| text.as_str()),
        _ => None,
    }
}

/// The length of a path's root: 1 for `/…`, `scheme://` for a URI; `None` for anything else.
fn root_length(text: &str) -> Option<usize> {
    if text.starts_with('/') {
        return Some(1);
    }
    let (scheme, _) = text.split_once("://")?;
    let valid = !scheme.is_empty()
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme.len() + 3)
}

/// The longest prefix of every path that ends with `/` and holds more than the root.
fn common_folder(paths: &[&str]) -> Option<String> {
    let first = paths.first()?;
    let mut shared = first.len();
    for path in &paths[1..] {
        shared = first
            .bytes()
            .zip(path.bytes())
            .take(shared)
            .take_while(|(a, b)| a == b)
            .count();
    }
    let folder_end = first[..shared].rfind('/')? + 1;
    let root = root_length(first)?;
    (folder_end > root).then(|| first[..folder_end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> Vec<Column> {
        vec![
            Column::new("kind", "String"),
            Column::new("id", "String"),
            Column::new("bytes", "Int64"),
        ]
    }

    fn row(kind: &str, id: &str) -> Vec<Value> {
        vec![kind.into(), id.into(), Value::Int(1)]
    }

    #[test]
    fn paths_lose_the_table_location_and_ids_stay() {
        let rows = vec![
            row("snapshot", "5243835696863438729"),
            row("file", "/tmp/w/events/data/a.parquet"),
            row("file", "/tmp/w/events/metadata/snap-1.avro"),
        ];
        let (location, shown) = relative_to_location(&columns(), &rows, None).unwrap();
        assert_eq!(location, "/tmp/w/events/");
        assert_eq!(shown[0], rows[0]);
        assert_eq!(shown[1], row("file", "data/a.parquet"));
        assert_eq!(shown[2], row("file", "metadata/snap-1.avro"));
    }

    #[test]
    fn uris_and_a_shared_file_name_prefix() {
        let rows = vec![
            row("file", "s3://bucket/t/data/ab.parquet"),
            row("file", "s3://bucket/t/data/ac.parquet"),
        ];
        let (location, shown) = relative_to_location(&columns(), &rows, None).unwrap();
        assert_eq!(location, "s3://bucket/t/data/", "never inside a file name");
        assert_eq!(shown[1], row("file", "ac.parquet"));
    }

    #[test]
    fn no_location_without_two_paths_under_a_folder() {
        let one = vec![row("file", "/t/data/a.parquet"), row("total", "data")];
        assert_eq!(relative_to_location(&columns(), &one, None), None);
        let roots = vec![row("file", "/a/x"), row("file", "/b/y")];
        assert_eq!(
            relative_to_location(&columns(), &roots, None),
            None,
            "only '/'"
        );
        let buckets = vec![row("file", "s3://a/x"), row("file", "s3://b/y")];
        assert_eq!(relative_to_location(&columns(), &buckets, None), None);
        let other_column = vec![
            vec!["/t/a".into(), "1".into(), Value::Int(1)],
            vec!["/t/b".into(), "2".into(), Value::Int(1)],
        ];
        assert_eq!(
            relative_to_location(&columns(), &other_column, None),
            None,
            "`kind` is no path column"
        );
    }

    #[test]
    fn a_procedures_result_is_relative_to_its_table() {
        let rows = vec![
            row("file", "/tmp/w/events/data/a.parquet"),
            row("file", "/tmp/w/events/data/b.parquet"),
            row("file", "/elsewhere/x.parquet"),
        ];
        let (location, shown) =
            relative_to_location(&columns(), &rows, Some("/tmp/w/events")).unwrap();
        assert_eq!(
            location, "/tmp/w/events/",
            "the table, not the shared data/ folder"
        );
        assert_eq!(shown[0], row("file", "data/a.parquet"));
        assert_eq!(shown[2], rows[2], "a path outside the table stays whole");
        let one = vec![row("file", "s3://b/t/metadata/v3.metadata.json")];
        let (location, shown) = relative_to_location(&columns(), &one, Some("s3://b/t/")).unwrap();
        assert_eq!(location, "s3://b/t/");
        assert_eq!(shown[0], row("file", "metadata/v3.metadata.json"));
        assert!(relative_to_location(&columns(), &rows, Some("/other")).is_none());
    }
}

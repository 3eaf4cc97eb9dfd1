//! Moving a table to another root: a local folder, or a folder on the S3 or Azure emulator.
//!
//! Iceberg metadata holds absolute paths, so a copy must rewrite the table location wherever the
//! metadata graph names it: in `*.metadata.json` every string (location, manifest lists,
//! metadata-log, statistics paths), and in manifest lists and manifests every string of every
//! entry. Avro files are decoded and re-encoded with icetrim's own container reader and writer
//! under the same writer schema (verbatim), the same header metadata and the same codec; a manifest
//! list's `manifest_length` is set to the rewritten manifest's size. Content files (Parquet, Puffin,
//! anything else, including a stray `.avro` that is not Avro) are copied byte for byte: paths inside a
//! position-delete file are not rewritten.
//! A local target gets each file's last-modified time as its mtime.
//!
#![allow(dead_code)]

use std::collections::HashMap;

use apache_avro::types::Value as Avro;
use bytes::Bytes;
use futures::TryStreamExt;
use icetrim::internals::iceberg::avro::container::{Container, ContainerWriter};
use icetrim::internals::iceberg::avro::cursor::Cursor;
use icetrim::internals::iceberg::avro::encode::encode_value;
use icetrim::internals::iceberg::avro::value::decode_value;
use icetrim::internals::io::FileIO;
use serde_json::Value as Json;

/// One end of a copy: a store and the table root on it (no trailing slash).
#[derive(Clone)]
pub struct Root {
    pub io: FileIO,
    pub root: String,
}

impl Root {
    pub fn new(io: FileIO, root: &str) -> Self {
        Root {
            io,
            root: root.trim_end_matches('/').to_string(),
        }
    }

    pub fn uri(&self, relative: &str) -> String {
        format!("{}/{relative}", self.root)
    }

    /// The name (relative to the root) of the newest metadata file directly under `metadata/`.
    pub async fn newest_metadata(&self) -> String {
        let files = self.files().await;
        super::rest_catalog::newest_metadata_name(
            files
                .iter()
                .map(|(rel, _, _)| rel.as_str())
                .filter(|rel| rel.starts_with("metadata/") && !rel[9..].contains('/')),
        )
        .expect("a metadata file in the copy")
        .to_string()
    }

    /// Every file under the root: (path relative to it, size, last-modified ms).
    pub async fn files(&self) -> Vec<(String, u64, Option<i64>)> {
        let listed: Vec<_> = self
            .io
            .list(&self.root)
            .try_collect()
            .await
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", self.root));
        let mut out: Vec<_> = listed
            .into_iter()
            .map(|f| (self.relative(&f.uri), f.size, f.last_modified_ms))
            .collect();
        out.sort();
        out
    }

    /// `uri` relative to the root (after the scheme-free part matches).
    fn relative(&self, uri: &str) -> String {
        let strip = |s: &str| {
            s.trim_start_matches("file://")
                .split_once("://")
                .map_or(s.to_string(), |(_, rest)| rest.to_string())
        };
        let root = strip(&self.root);
        let path = strip(uri);
        path.strip_prefix(&root)
            .map(|rest| rest.trim_start_matches('/').to_string())
            .unwrap_or_else(|| panic!("listed {uri} is not under {}", self.root))
    }
}

/// How strings naming the table change: each prefix in `from` (a whole path component) becomes `to`.
pub struct Rewrite {
    pub from: Vec<String>,
    pub to: String,
}

impl Rewrite {
    /// From a local folder as pyiceberg (`file://<dir>`) or ClickHouse (`<dir>`) spells it.
    pub fn from_local(dir: &str, to: &str) -> Self {
        let dir = dir.trim_end_matches('/');
        Rewrite {
            from: vec![
                format!("file://{dir}"),
                format!("file:{dir}"),
                dir.to_string(),
            ],
            to: to.trim_end_matches('/').to_string(),
        }
    }

    pub fn from_uri(root: &str, to: &str) -> Self {
        Rewrite {
            from: vec![root.trim_end_matches('/').to_string()],
            to: to.trim_end_matches('/').to_string(),
        }
    }

    /// `text` under a `from` prefix, moved under `to`; `None` when it names nothing in the table.
    pub fn apply(&self, text: &str) -> Option<String> {
        self.from.iter().find_map(|prefix| {
            let rest = text.strip_prefix(prefix.as_str())?;
            (rest.is_empty() || rest.starts_with('/')).then(|| format!("{}{rest}", self.to))
        })
    }

    fn json(&self, value: &mut Json) {
        match value {
            Json::String(s) => {
                if let Some(moved) = self.apply(s) {
                    *s = moved;
                }
            }
            Json::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            Json::Object(map) => map.values_mut().for_each(|v| self.json(v)),
            _ => {}
        }
    }

    /// Rewrites strings in place; a list entry's `manifest_length` follows its manifest's new size.
    fn avro(&self, value: &mut Avro, sizes: &HashMap<String, u64>) {
        match value {
            Avro::String(s) => {
                if let Some(moved) = self.apply(s) {
                    *s = moved;
                }
            }
            Avro::Union(_, inner) => self.avro(inner, sizes),
            Avro::Array(items) => items.iter_mut().for_each(|v| self.avro(v, sizes)),
            Avro::Map(map) => map.values_mut().for_each(|v| self.avro(v, sizes)),
            Avro::Record(fields) => {
                fields.iter_mut().for_each(|(_, v)| self.avro(v, sizes));
                let path = fields
                    .iter()
                    .find_map(|(name, v)| match (name.as_str(), v) {
                        ("manifest_path", Avro::String(p)) => Some(p.clone()),
                        _ => None,
                    });
                if let Some(size) = path.and_then(|p| sizes.get(&p)) {
                    for (name, v) in fields.iter_mut() {
                        if name == "manifest_length" {
                            *v = Avro::Long(i64::try_from(*size).expect("size fits"));
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// What a `.avro` file is: a manifest list (its records have `manifest_path`), another Avro file
/// (a manifest), or not Avro at all (a stray that only looks like one: copied as it is).
#[derive(PartialEq)]
enum AvroKind {
    ManifestList,
    Manifest,
    NotAvro,
}

fn avro_kind(bytes: &[u8], name: &str) -> AvroKind {
    let Ok(container) = Container::open(bytes, name) else {
        return AvroKind::NotAvro;
    };
    let is_list = container
        .header
        .schema
        .as_record()
        .is_some_and(|r| r.field("manifest_path").is_some());
    if is_list {
        AvroKind::ManifestList
    } else {
        AvroKind::Manifest
    }
}

/// `bytes` of the Avro file `name` re-encoded with its strings rewritten.
pub fn rewrite_avro(
    bytes: &[u8],
    name: &str,
    rw: &Rewrite,
    sizes: &HashMap<String, u64>,
) -> Vec<u8> {
    let container = Container::open(bytes, name).unwrap_or_else(|e| panic!("{name}: {e}"));
    let header = &container.header;
    let mut writer = ContainerWriter::new(&header.schema_json, &header.metadata, header.codec);
    let mut failure = None;
    container
        .for_each_datum(|c: &mut Cursor<'_>| {
            let mut value = decode_value(c, &header.schema)?;
            rw.avro(&mut value, sizes);
            if let Err(e) = writer.append(|out| encode_value(out, &header.schema, &value)) {
                failure.get_or_insert(e);
            }
            if writer.block_full() {
                writer.flush_block().expect("flush an Avro block");
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    if let Some(e) = failure {
        panic!("{name}: cannot re-encode: {e}");
    }
    writer.finish().expect("finish the Avro file")
}

/// The metadata JSON `bytes` with every table path rewritten.
pub fn rewrite_json(bytes: &[u8], name: &str, rw: &Rewrite) -> Vec<u8> {
    let mut doc: Json = serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    rw.json(&mut doc);
    serde_json::to_vec(&doc).expect("encode metadata JSON")
}

/// Copies every file under `src` to `dst`, rewriting table paths by `rw`. `local_mtimes`: `dst` is
/// a local folder whose files get the source's last-modified times.
pub async fn copy_table(src: &Root, dst: &Root, rw: &Rewrite, local_mtimes: bool) {
    let files = src.files().await;
    let mut sources = Vec::with_capacity(files.len());
    for (rel, _, modified) in files {
        let bytes = src
            .io
            .read(&src.uri(&rel))
            .await
            .unwrap_or_else(|e| panic!("read {rel}: {e}"));
        sources.push((rel, bytes, modified));
    }
    // Manifests first, so a list can carry their new lengths.
    let mut sizes = HashMap::new();
    let mut lists = Vec::new();
    for (rel, bytes, modified) in &sources {
        let kind = if rel.ends_with(".avro") {
            avro_kind(bytes, rel)
        } else {
            AvroKind::NotAvro
        };
        let out = if kind == AvroKind::ManifestList {
            lists.push((rel, bytes, modified));
            continue;
        } else if kind == AvroKind::Manifest {
            let out = rewrite_avro(bytes, rel, rw, &HashMap::new());
            // Keyed as the rewritten list names it: the moved form of its source URI.
            if let Some(moved) = rw.apply(&src.uri(rel)) {
                sizes.insert(moved, out.len() as u64);
            }
            out
        } else if rel.ends_with(".metadata.json") {
            rewrite_json(bytes, rel, rw)
        } else {
            bytes.to_vec()
        };
        put(dst, rel, out, *modified, local_mtimes).await;
    }
    for (rel, bytes, modified) in lists {
        let out = rewrite_avro(bytes, rel, rw, &sizes);
        put(dst, rel, out, *modified, local_mtimes).await;
    }
}

async fn put(dst: &Root, rel: &str, bytes: Vec<u8>, modified: Option<i64>, local_mtimes: bool) {
    let uri = dst.uri(rel);
    dst.io
        .overwrite(&uri, Bytes::from(bytes))
        .await
        .unwrap_or_else(|e| panic!("write {uri}: {e}"));
    if let (true, Some(ms)) = (local_mtimes, modified) {
        set_mtime(std::path::Path::new(&uri), ms);
    }
}

/// Sets a local file's mtime to `ms`.
pub fn set_mtime(path: &std::path::Path, ms: i64) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let time = std::time::UNIX_EPOCH
        + std::time::Duration::from_millis(u64::try_from(ms).expect("time after 1970"));
    file.set_modified(time).expect("set mtime");
}
